"""The kubelet's podresources API (``pkg/kubelet/apis/podresources``), the pod-set fingerprint, and the
NodeResourceTopology an exporter builds from them.

* ``view``: what List, GetAllocatableResources and Get answer for an emulated node (pure engine);
* ``fingerprint``: the ``pfp0v001`` fingerprint and its trace (``podfingerprint``);
* ``nrt``: resource-topology-exporter's NodeResourceTopology of the node (pure engine);
* ``ratelimit``: the server's token bucket;
* ``servicer_v1``, ``servicer_v1alpha1``, ``server``: the gRPC side, served on its own unix socket.
"""
