"""``kubeletemu extender``: a kube-scheduler extender (``k8s.io/kube-scheduler/extender/v1``) whose answers
come from an exact mirror of every node's kubelet (issue 45).

- :mod:`.protocol` and :mod:`.gojson`: the wire, read and written as Go's ``encoding/json`` does;
- :mod:`.mirrors`: one ``NodeEmulator`` per node, applied by generation, failing closed when absent, stale
  or disconnected;
- :mod:`.ledger`: in-flight placements the nodes have not reported yet, counted by every verb;
- :mod:`.engine`: Filter, Prioritize and Preempt on the mirrors (no HTTP);
- :mod:`.server`, :mod:`.metrics`, :mod:`.binder`, :mod:`.config`: the HTTPS server with mutual TLS, its
  Prometheus metrics, the optional Bind, and the configuration file.

Needs the ``extender`` extra (aiohttp); Bind also the ``nodes`` extra (lightkube). No gRPC here.
"""
