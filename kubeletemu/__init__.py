"""kubeletemu: the kubelet's NUMA-aware admission, reproduced exactly."""

__version__ = "0.1.0"
