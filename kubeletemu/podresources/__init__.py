"""The kubelet's podresources API (``pkg/kubelet/apis/podresources``) and the pod-set fingerprint.

``fingerprint`` is the ``pfp0v001`` fingerprint that podresources consumers publish in NodeResourceTopology.
"""
