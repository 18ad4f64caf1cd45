"""``NodeState`` to and from its ``kubeletemu.v1.NodeState`` message (``protos/kubeletemu/v1/feed.proto``)."""

from __future__ import annotations

import json

from hostprobe.model_json import HostJSONError, host_from_json_dict
from kubeletemu._proto.kubeletemu.v1 import feed_pb2 as pb
from kubeletemu.feed.config_codec import ConfigCodecError, decode_config, encode_config
from kubeletemu.feed.state import NodeState, NodeStateError, StoredHint, hint_mask, hint_of

# A node's state holds its machine and every pod: far above gRPC's 4 MiB default on a busy node. Both ends
# of the feed allow this much per message.
MAX_STATE_BYTES = 256 * 1024 * 1024


def state_message(state: NodeState) -> pb.NodeState:
    return pb.NodeState(
        node_name=state.node_name,
        generation=state.generation,
        incarnation=state.incarnation,
        kubelet_version=state.kubelet_version,
        host_json=json.dumps(state.host.to_json_dict(), separators=(",", ":")),
        config_json=json.dumps(encode_config(state.config), separators=(",", ":")),
        pods=list(state.pods),
        cpu_state=state.cpu_state,
        memory_state=state.memory_state,
        device_state=state.device_state,
        hints=[_hint_message(h) for h in state.hints],
    )


def _hint_message(stored: StoredHint) -> pb.StoredHint:
    nodes = hint_mask(stored.hint)
    return pb.StoredHint(
        pod_uid=stored.pod_uid,
        container=stored.container,
        has_affinity=nodes is not None,
        numa_nodes=nodes or [],
        preferred=stored.hint.preferred,
    )


def state_from_message(message: pb.NodeState) -> NodeState:
    """The state a message carries; :class:`NodeStateError` naming the field that does not decode."""
    name = message.node_name
    try:
        host = host_from_json_dict(json.loads(message.host_json))
    except (ValueError, HostJSONError) as err:
        raise NodeStateError(f"node {name}: host_json: {err}") from None
    try:
        config = decode_config(json.loads(message.config_json))
    except (ValueError, ConfigCodecError) as err:
        raise NodeStateError(f"node {name}: config_json: {err}") from None
    hints = tuple(
        StoredHint(
            h.pod_uid, h.container, hint_of(list(h.numa_nodes) if h.has_affinity else None, h.preferred)
        )
        for h in message.hints
    )
    return NodeState(
        node_name=name,
        generation=message.generation,
        incarnation=message.incarnation,
        kubelet_version=message.kubelet_version,
        host=host,
        config=config,
        pods=tuple(message.pods),
        cpu_state=message.cpu_state,
        memory_state=message.memory_state,
        device_state=message.device_state,
        hints=hints,
    )
