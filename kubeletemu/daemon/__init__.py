"""The kubeletemu daemon: systemd integration, logging and metrics around the admission engine."""
