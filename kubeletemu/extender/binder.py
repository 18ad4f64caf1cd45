"""The optional Bind verb: the extender binds the pod itself, as kube-scheduler's ``DefaultBinder`` does
(``pkg/scheduler/framework/plugins/defaultbinder/default_binder.go``, kubernetes v1.37.2): a ``v1.Binding``
named after the pod, carrying its UID, whose target is the Node, created in the pod's ``binding``
subresource. The API server is reached through a kubeconfig by the nodes' client
(:class:`kubeletemu.nodes.api.ApiServer`, lightkube: the ``nodes`` extra).

An error is returned as ``ExtenderBindingResult.Error``: kube-scheduler then unreserves and requeues the pod.
"""

from __future__ import annotations

from kubeletemu.nodes.api import ApiError, ApiServer, Unreachable, load_kubeconfig
from kubeletemu.scheduler.extender.protocol import ExtenderBindingArgs, ExtenderBindingResult


class Binder:
    """Creates Bindings on the API server of ``kubeconfig`` (its ``context``)."""

    def __init__(self, kubeconfig: str, context: str | None = None) -> None:
        self.api = ApiServer(load_kubeconfig(kubeconfig, context))

    async def bind(self, args: ExtenderBindingArgs) -> ExtenderBindingResult:
        namespace = args.pod_namespace or "default"
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": args.pod_name, "namespace": namespace, "uid": args.pod_uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": args.node},
        }
        try:
            await self.api.create(f"/api/v1/namespaces/{namespace}/pods/{args.pod_name}/binding", body)
        except (ApiError, Unreachable) as err:
            return ExtenderBindingResult(error=f"binding {namespace}/{args.pod_name} to {args.node}: {err}")
        return ExtenderBindingResult()

    async def close(self) -> None:
        await self.api.close()
