"""The node feed's engine: a node's exact state (:mod:`kubeletemu.feed.state`), its protobuf form
(:mod:`kubeletemu.feed.wire`) and the per-agent publisher streams read from (:mod:`kubeletemu.feed.hub`).
No gRPC here: the daemon's servicer and the extender's client carry it."""
