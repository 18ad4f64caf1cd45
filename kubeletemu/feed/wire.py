"""``NodeState`` to and from its ``kubeletemu.v1.NodeState`` message (``protos/kubeletemu/v1/feed.proto``)."""

from __future__ import annotations

import json
from functools import lru_cache

from hostprobe.model import HostTopology
from hostprobe.model_json import HostJSONError, host_from_json_dict
from kubeletemu._proto.kubeletemu.v1 import feed_pb2 as pb
from kubeletemu.config import Config
from kubeletemu.feed.config_codec import ConfigCodecError, decode_config, encode_config
from kubeletemu.feed.state import NodeState, NodeStateError, StoredHint, hint_mask, hint_of

# A node's state holds its machine and every pod: far above gRPC's 4 MiB default on a busy node. Both ends
# of the feed allow this much per message.
MAX_STATE_BYTES = 256 * 1024 * 1024


# The agent's side of the same saving: a node keeps its HostTopology object for its life (nodes of one group
# share one), so its text is made once per object. Held by id with the object itself, so the id stays its.
_HOST_TEXTS: dict[int, tuple[HostTopology, str]] = {}


def _host_text(host: HostTopology) -> str:
    held = _HOST_TEXTS.get(id(host))
    if held is None:
        if len(_HOST_TEXTS) >= 256:
            _HOST_TEXTS.clear()
        held = _HOST_TEXTS[id(host)] = (host, json.dumps(host.to_json_dict(), separators=(",", ":")))
    return held[1]


def state_message(state: NodeState) -> pb.NodeState:
    return pb.NodeState(
        node_name=state.node_name,
        generation=state.generation,
        incarnation=state.incarnation,
        kubelet_version=state.kubelet_version,
        host_json=_host_text(state.host),
        config_json=json.dumps(encode_config(state.config), separators=(",", ":")),
        pods=list(state.pods),
        cpu_state=state.cpu_state,
        memory_state=state.memory_state,
        device_state=state.device_state,
        hints=[_hint_message(h) for h in state.hints],
        refused_pods=list(state.refused),
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


# A node's machine and configuration rarely change between its states, and a fleet's nodes share a few
# shapes: both are decoded once per distinct text (the results are frozen, so sharing them is safe).
@lru_cache(maxsize=256)
def _host(text: str) -> HostTopology:
    return host_from_json_dict(json.loads(text))


@lru_cache(maxsize=256)
def _config(text: str) -> Config:
    return decode_config(json.loads(text))


def state_from_message(message: pb.NodeState) -> NodeState:
    """The state a message carries; :class:`NodeStateError` naming the field that does not decode."""
    name = message.node_name
    try:
        host = _host(message.host_json)
    except (ValueError, HostJSONError) as err:
        raise NodeStateError(f"node {name}: host_json: {err}") from None
    try:
        config = _config(message.config_json)
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
        refused=tuple(message.refused_pods),
    )
