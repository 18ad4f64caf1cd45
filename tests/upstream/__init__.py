"""The upstream Kubernetes components the e2e tests run beside kubeletemu, built from their released Go
modules (pins.py, build.py) and started on loopback (controlplane.py)."""
