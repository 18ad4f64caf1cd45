"""Exact nodes in a real cluster (``kubeletemu nodes``): each node of a Nodes file registers with an API
server, renews its Lease, and admits the pods bound to it through its own
:class:`~kubeletemu.emulator.NodeEmulator`, writing their status as the kubelet of its version writes it.

- :mod:`.spec`: the ``kind: Nodes`` file (the fleet's ``nodeGroups``, with a start-up latency per group);
- :mod:`.objects`: the Node, Lease, pod statuses and Events, built as the kubelet builds them;
- :mod:`.api`: the API server, reached through a kubeconfig (lightkube reads it);
- :mod:`.member`: one node's kubelet loops (registration, Lease, status, its pods);
- :mod:`.run`: every node of the file in one event loop, until stopped.

No gRPC here: the engine is used directly. Needs the ``nodes`` extra (lightkube).
"""
