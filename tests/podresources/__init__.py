"""Tests of kubeletemu.podresources: the fingerprint and the podresources wire contract."""
