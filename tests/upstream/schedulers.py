"""KubeSchedulerConfiguration files for the schedulers the e2e tests start beside the default kube-scheduler.

Each profile has its own ``schedulerName``, so that several schedulers serve one API server without taking
each other's pods (a pod names its scheduler in ``spec.schedulerName``):

* scheduler-plugins' NodeResourceTopologyMatch, as its README (pkg/noderesourcetopology/README.md at
  v0.34.7) configures it: the plugin at filter and score beside the default plugins, its scoring strategy
  LeastAllocated (the default, ``SetDefaults_NodeResourceTopologyMatchArgs``);
  - without the cache: ``cacheResyncPeriodSeconds`` unset, so ``initNodeTopologyInformer``
    (pluginhelpers.go) takes the passthrough cache, which reads each NodeResourceTopology as the exporter
    last wrote it;
  - with the overreserve cache: ``cacheResyncPeriodSeconds`` > 0 AND the plugin at reserve (the README: "you
    need to both enable the Reserve plugin and to set the cacheResyncPeriodSeconds") and postBind (where
    the cache learns a reserved pod is bound). The cache's own settings keep their defaults: a dedicated pod
    informer (``informerMode: Dedicated``, podprovider.NewFromHandle), the resync method read from the
    NRT's ``nodeTopologyPodsFingerprintMethod`` attribute (``Autodetect``), foreign pods all tracked;
* a kube-scheduler with the default plugins under another name (the second kube-scheduler version).

Client and leader election are set in the file: with ``--config`` kube-scheduler reads them from there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

API_VERSION = "kubescheduler.config.k8s.io/v1"
NRT_PLUGIN = "NodeResourceTopologyMatch"
NRT_PASSTHROUGH = "nrt-passthrough"  # the schedulerName of the profile without the cache
NRT_OVERRESERVE = "nrt-overreserve"  # ... and of the one with the overreserve cache
# Seconds between the overreserve cache's resyncs. The README advises at least 5 for a large cluster's
# sake; a test's three nodes want the pods that wait on a resync bound sooner.
RESYNC_SECONDS = 2


def _config(kubeconfig: Path, profile: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": False},
        "profiles": [profile],
    }


def nrt_config(kubeconfig: Path, scheduler_name: str, *, cache_resync_seconds: int = 0) -> dict[str, Any]:
    """One profile named ``scheduler_name``: the default plugins and NodeResourceTopologyMatch, with the
    overreserve cache when ``cache_resync_seconds`` > 0."""
    points = ["filter", "score"] + (["reserve", "postBind"] if cache_resync_seconds > 0 else [])
    args: dict[str, Any] = {"scoringStrategy": {"type": "LeastAllocated"}}
    if cache_resync_seconds > 0:
        args["cacheResyncPeriodSeconds"] = cache_resync_seconds
    return _config(
        kubeconfig,
        {
            "schedulerName": scheduler_name,
            "plugins": {point: {"enabled": [{"name": NRT_PLUGIN}]} for point in points},
            "pluginConfig": [{"name": NRT_PLUGIN, "args": args}],
        },
    )


def default_config(kubeconfig: Path, scheduler_name: str) -> dict[str, Any]:
    """kube-scheduler's default plugins under ``scheduler_name``."""
    return _config(kubeconfig, {"schedulerName": scheduler_name})


def write(config: dict[str, Any], path: Path) -> Path:
    """JSON is YAML: kube-scheduler reads it as its configuration file."""
    path.write_text(json.dumps(config, indent=1) + "\n")
    return path
