"""The fleet checked against the real thing: a Fleet file on a real cluster and through ``kubeletemu fleet``.

Run: python benchmarks/bench_real_fleet.py [--fleet FILE] [--scheduler default] [--seeds 1 2 3 4 5]
                                           [--kube-scheduler 1.34] [--extender [--close-on ttl]]
                                           [--version 1.37] [-o json]

The real side (``tests/realfleet``): etcd, kube-apiserver and kube-controller-manager of the pinned release
(built on first use, or from ``KUBELETEMU_UPSTREAM_ASSETS``), the file's nodes as ``kubeletemu nodes``, and
for each seed a fresh real kube-scheduler (``--kube-scheduler 1.34``: kube-scheduler v1.34.7, built with
scheduler-plugins by tests/upstream/scheduler_plugins.py, against the same API server, and the fleet's
queue at 1.34); the seed's arrivals (the fleet's own seeded stream) become
ReplicaSets of one replica, created at their arrival times. The simulated side runs the same configurations
through the fleet's engine. Each measure is the mean with a 95 % interval over the seeds (the fleet's
statistics), real beside simulated; a row agrees when the intervals overlap. Then the simulation again with
the latencies each real run showed (its bind-to-Running and Failed-to-replacement medians as the fleet's
``startupLatency`` and ReplicaSet delays): what differs still is not those latencies. Also printed: each
seed's figures, the wall time and the load average before and after (the real side runs in wall-clock
time, so a busy machine shows in its latencies).

``--extender``: the real side is kube-scheduler asking ``kubeletemu extender`` (fed by the nodes' mutual-TLS
feed, docs/extender.md's snippet without ``managedResources``, so every pod is asked about); the simulated
side is the file's scheduler: ``tests/realfleet/fleet-small-extender.yaml``'s ``extender`` (or
``extender-ttl`` with ``--close-on ttl``), the fleet's ``extender`` setup running the extender's own code.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubeletemu.fleet.spec import OVERRESERVE, ConfigurationSpec, load_fleet
from kubeletemu.fleet.stats import base_name
from tests.realfleet import compare
from tests.realfleet.cluster import RealCluster, SchedulerSetup
from tests.upstream import build, exporters, scheduler_plugins, schedulers

DEFAULT_FLEET = Path(__file__).resolve().parents[1] / "tests" / "realfleet" / "fleet-small.yaml"
KUBE_SCHEDULER_1_34 = "1.34"
CLUSTER = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleet", type=Path, default=DEFAULT_FLEET)
    parser.add_argument("--scheduler", default="default", help="the file's scheduler (setup) to compare")
    parser.add_argument(
        "--kube-scheduler", choices=("newest", KUBE_SCHEDULER_1_34), default="newest",
        help="the real kube-scheduler: the control plane's, or v1.34.7 (the fleet's queue at 1.34 then)",
    )  # fmt: skip
    parser.add_argument(
        "--extender", action="store_true", help="the real scheduler asks kubeletemu extender (see above)"
    )
    parser.add_argument(
        "--close-on", choices=("agent-report", "ttl"), default="agent-report",
        help="with --extender: what closes the ledger's entries (its ledger.closeOn)",
    )  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="*", help="default: the file's matrix.seeds")
    parser.add_argument(
        "--version", help="the pinned Kubernetes minor of the real components (default newest)"
    )
    parser.add_argument("--trace", type=Path, help="write each real run's events (JSON) to this file")
    parser.add_argument("--logs", type=Path, help="keep the components' logs in this directory")
    parser.add_argument(
        "--manager-arg",
        action="append",
        default=[],
        help="a kube-controller-manager argument (repeatable)",
    )
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    options = parser.parse_args()

    spec = load_fleet(options.fleet)
    configs = compare.configurations(spec, options.scheduler, options.seeds)
    setup = SchedulerSetup(f"kube-scheduler-{options.scheduler}")
    label = options.scheduler
    if options.extender:
        label = f"kubeletemu extender, closeOn {options.close_on} (simulated: {options.scheduler})"
    binary = None
    if options.kube_scheduler == KUBE_SCHEDULER_1_34:
        older = scheduler_plugins.ensure()
        binary = older.path(scheduler_plugins.KUBE_SCHEDULER)
        setup = SchedulerSetup(setup.name, binary)
        configs = [dataclasses.replace(c, scheduler_version=KUBE_SCHEDULER_1_34) for c in configs]
        label = f"{label}, kube-scheduler {scheduler_plugins.SCHEDULER_PLUGINS.kubernetes.kubernetes}"
    # scheduler-plugins' NodeResourceTopologyMatch: its scheduler, and an RTE per node.
    topology_aware = configs[0].nrt_match_args() is not None
    rte = exporters.ensure_all().rte if topology_aware else None
    load_before = os.getloadavg()
    started = time.monotonic()
    assets = build.ensure(options.version, CLUSTER)
    node_names = [f"{g.name}-{i:03d}" for g in spec.node_groups for i in range(g.count)]
    cluster = RealCluster.start(
        assets, options.fleet, node_names, options.manager_arg, rte, extender=options.extender,
        close_on=options.close_on,
    )  # fmt: skip
    if options.extender:
        setup = cluster.extender_setup(binary)
    real = []
    try:
        for config in configs:
            print(f"real run {config.name} ...", file=sys.stderr, flush=True)
            chosen = _nrt_setup(cluster, config) if topology_aware else setup
            real.append(cluster.run(config, chosen))
    finally:
        cluster.stop(options.logs)
    real_wall = time.monotonic() - started
    if options.trace:  # the real runs are kept before the simulations, which can take long
        options.trace.write_text(json.dumps({r["name"]: r.pop("trace") for r in real}))
    else:
        for r in real:
            r.pop("trace")
    simulated = compare.simulate(configs)
    calibrated = compare.simulate([compare.calibrated(c, r) for c, r in zip(configs, real, strict=True)])
    load_after = os.getloadavg()
    rows, calibrated_rows = [], []
    for name in dict.fromkeys(base_name(c.name) for c in configs):
        chosen = [i for i, c in enumerate(configs) if base_name(c.name) == name]
        shown = label if len(chosen) == len(configs) else base_name(name)
        rows += compare.rows(shown, [real[i] for i in chosen], [simulated[i] for i in chosen])
        calibrated_rows += compare.rows(
            f"{shown}, real latencies", [real[i] for i in chosen], [calibrated[i] for i in chosen]
        )
    if options.output == "json":
        out = {
            "real": real,
            "simulated": [_lean(s) for s in simulated],
            "calibrated": [_lean(s) for s in calibrated],
            "rows": [r.__dict__ for r in (*rows, *calibrated_rows)],
        }
        print(json.dumps(out, indent=2, default=str))
        return 0
    version = assets.directory.parent.name if not os.environ.get(build.ASSETS_ENV) else "assets"
    print(f"{options.fleet}: scheduler {options.scheduler}, real components {version}, seeds "
          f"{[c.seed for c in configs]}")  # fmt: skip
    print(compare.table([*rows, *calibrated_rows]))
    print(compare.per_seed(label, real, simulated))
    print(compare.per_seed("with the real latencies", real, calibrated))
    latencies = ", ".join(f"{r['bind_to_running_p50_s']:.2f}s / {r['replacement_p50_s']:.2f}s" for r in real)
    print(f"real latencies per seed (bind to Running p50 / Failed to replacement p50): {latencies}")
    for r in real:
        manager = r.get("controller_manager", {})
        waits = manager.get("queue_waits") or 1
        requests = manager.get("client_requests") or 1
        print(
            f"  seed {r['seed']}: pending p50 {r['pending_p50_s']:.2f}s, first create p50 "
            f"{r['first_create_p50_s']:.2f}s; kube-controller-manager: "
            f"{manager.get('stale_sync_skips', 0):.0f} stale-informer sync skips, "
            f"{manager.get('queue_retries', 0):.0f} ReplicaSet queue retries, "
            f"{manager.get('queue_wait_sum_s', 0) / waits * 1000:.0f} ms mean ReplicaSet queue wait, "
            f"{manager.get('client_throttle_sum_s', 0) / requests * 1000:.0f} ms mean client throttle"
        )
    print(
        f"real side {real_wall:.0f} s wall; load average (1, 5, 15 min) before "
        f"{', '.join(f'{v:.1f}' for v in load_before)}, after {', '.join(f'{v:.1f}' for v in load_after)}"
    )
    return 0


def _nrt_setup(cluster: RealCluster, config: ConfigurationSpec) -> SchedulerSetup:
    """scheduler-plugins' scheduler with one NodeResourceTopologyMatch profile (tests/upstream/schedulers.py):
    the overreserve cache with the configuration's resync period, or none (passthrough)."""
    resync = int(config.resync_period_s or 0) if config.cache == OVERRESERVE else 0
    profile = schedulers.NRT_OVERRESERVE if resync else schedulers.NRT_PASSTHROUGH
    path = cluster.plane.workdir / f"{profile}.config.json"
    schedulers.write(
        schedulers.nrt_config(cluster.plane.kubeconfig, profile, cache_resync_seconds=resync), path
    )
    binary = scheduler_plugins.ensure().path(scheduler_plugins.SCHEDULER)
    return SchedulerSetup(profile, binary, (f"--config={path}",), profile)


def _lean(result: dict[str, object]) -> dict[str, object]:
    """A fleet result without its long series (the log, utilisation, pending over time)."""
    return {k: v for k, v in result.items() if k not in ("log", "numa_utilisation", "pending_over_time")}


if __name__ == "__main__":
    raise SystemExit(main())
