"""Koordinator's DeviceShare plugin as far as it decides a pod's fit and NUMA alignment, exact to
koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``
(``pkg/scheduler/plugins/deviceshare``): the node's ``Device`` object less the devices bound pods hold
(their ``device-allocated`` annotations), the pod's GPU / RDMA / FPGA requests, the NUMA hints it gives the
Topology Manager next to NodeNUMAResource's, and its Filter and Reserve.

Modules: ``api`` (names and annotations), ``resourcelist`` (quota arithmetic), ``requests`` (request
conversion, PreFilter), ``node_device`` (the device cache), ``gpu`` (the GPU allocator), ``allocator``
(``AutopilotAllocator``), ``hints`` (the hint provider), ``plugin`` (the plugin).
"""

from kubeletemu.scheduler.koordinator.deviceshare.plugin import DeviceReserveResult, DeviceShare

__all__ = ["DeviceReserveResult", "DeviceShare"]
