"""Compact pod builders for the lifecycle tables: quantities as the strings a manifest would carry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubeletemu.pod import RESTART_POLICY_ALWAYS, Container, Pod, ResourceRequirements
from kubeletemu.quantity import Quantity

Requests = Mapping[str, str]


def rl(values: Requests | None) -> dict[str, Quantity]:
    return {name: Quantity.parse(text) for name, text in (values or {}).items()}


def ctr(name: str, requests: Requests | None = None, *, sidecar: bool = False) -> Container:
    """A container whose limits equal its requests (the QoS class does not matter to the fit)."""
    return Container(
        name,
        requests=rl(requests),
        limits=rl(requests),
        restart_policy=RESTART_POLICY_ALWAYS if sidecar else None,
    )


def make_pod(
    name: str,
    containers: Sequence[Container] | Requests | None = None,
    *,
    init: Sequence[Container] = (),
    overhead: Requests | None = None,
    pod_level: Requests | None = None,
) -> Pod:
    """``containers`` as a list, or one request map for a single container named ``app``."""
    if containers is None or isinstance(containers, Mapping):
        app: tuple[Container, ...] = (ctr("app", containers),)
    else:
        app = tuple(containers)
    return Pod(
        name=name,
        namespace="default",
        uid=f"uid-{name}",
        containers=app,
        init_containers=tuple(init),
        resources=None if pod_level is None else ResourceRequirements(requests=rl(pod_level)),
        overhead=rl(overhead),
    )
