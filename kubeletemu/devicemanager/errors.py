"""Device manager errors. Allocation errors are untyped in the kubelet (``UnexpectedAdmissionError``)."""

from __future__ import annotations


class DeviceManagerError(ValueError):
    """Bad configuration: device lists, selectors, checkpoints."""


class DeviceAllocationError(Exception):
    """``devicesToAllocate`` / ``allocateContainerResources`` refused; the text is the kubelet's."""
