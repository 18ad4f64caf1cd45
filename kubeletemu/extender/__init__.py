"""``kubeletemu extender``: a kube-scheduler extender (``k8s.io/kube-scheduler/extender/v1``) whose answers
come from an exact mirror of every node's kubelet (issue 45).

The answers themselves are :mod:`kubeletemu.scheduler.extender` (the wire, the mirrors, the ledger and the
verbs, free of HTTP and gRPC, so that the fleet's ``extender`` setup runs the same code). Here is the process:

- :mod:`.server`, :mod:`.metrics`, :mod:`.binder`, :mod:`.config`: the HTTPS server with mutual TLS, its
  Prometheus metrics, the optional Bind, and the configuration file;
- :mod:`.feed_client`: the node agents' feeds, applied to the mirrors.

Needs the ``extender`` extra (aiohttp); Bind also the ``nodes`` extra (lightkube). The feed client uses gRPC.
"""
