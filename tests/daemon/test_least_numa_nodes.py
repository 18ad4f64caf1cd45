"""LeastNUMANodes over gRPC and the CLI, from the daemon's own state (scheduler-side.md's example).

Sample node: NUMA 0 = CPUs 0-3,8-11 (CPU 0 reserved: 7 free), NUMA 1 = 4-7,12-15 (8 free). The
plugin's score is 100 - k * (100 // 8) + (100 // 8) // 2 when the minimum distance is reachable:
94 for one NUMA node, 82 for two.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

from kubeletemu._proto.kubeletemu.v1 import admission_pb2 as pb
from tests.daemon.daemon_process import REPO, DaemonProcess

MakeDaemon = Callable[..., DaemonProcess]


def pod(name: str, *cpus: int) -> str:
    containers = "".join(
        f"  - name: c{i}\n    resources:\n      limits: {{cpu: '{n}', memory: 256Mi}}\n"
        for i, n in enumerate(cpus)
    )
    head = f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, uid: uid-{name}}}\n"
    return f"{head}spec:\n  containers:\n{containers}"


def ask(daemon: DaemonProcess, manifest: str) -> pb.LeastNUMANodesResponse:
    request = pb.LeastNUMANodesRequest(pod=pb.PodSource(manifest=manifest))
    reply: pb.LeastNUMANodesResponse = daemon.stub().LeastNUMANodes(request, timeout=10)
    return reply


def test_least_numa_nodes_follows_the_node_state(make_daemon: MakeDaemon) -> None:
    daemon = make_daemon()
    two_by_three = pod("web", 3, 3)
    fresh = ask(daemon, two_by_three)
    # Empty node: each 3-CPU container fits one NUMA node.
    assert (fresh.scope, fresh.numa_nodes, fresh.min_distance, fresh.score) == ("container", 1, True, 94)
    # Bring the free CPUs to 2 (NUMA 0) + 4 (NUMA 1), as in the spec's node 1.
    for name, cpus in (("five", 5), ("four", 4)):
        admitted = daemon.stub().Admit(
            pb.AdmitRequest(pod=pb.PodSource(manifest=pod(name, cpus))), timeout=10
        )
        assert admitted.admitted
    busy = ask(daemon, two_by_three)
    # c0 takes 3 of NUMA 1's 4; c1 then needs NUMA 0 and 1 (2 + 1): two nodes, the minimum distance
    # (the only pair) reachable: 100 - 24 + 6.
    assert (busy.numa_nodes, busy.min_distance, busy.score) == (2, True, 82)
    assert [(r.name, list(r.numa_nodes), r.fits) for r in busy.requirements] == [
        ("c0", [1], True),
        ("c1", [0, 1], True),
    ]
    # Pod scope: the whole 6-CPU pod needs both nodes.
    pod_scope = daemon.stub().LeastNUMANodes(
        pb.LeastNUMANodesRequest(pod=pb.PodSource(manifest=two_by_three), scope="pod"), timeout=10
    )
    assert (pod_scope.scope, pod_scope.numa_nodes, pod_scope.score) == ("pod", 2, 82)
    # A pod that fits nowhere: its first container already needs 7 of the 6 free CPUs; the plugin
    # stops there with the minimum score.
    huge = ask(daemon, pod("huge", 7, 7))
    assert (huge.numa_nodes, huge.score) == (-1, 0)
    assert [(r.name, r.fits) for r in huge.requirements] == [("c0", False)]

    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubeletemu.cli",
            "least-numa-nodes",
            "-f",
            "-",
            "-o",
            "json",
            "--socket",
            str(daemon.socket),
        ],
        input=two_by_three,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    # The score an integer, not the proto3 JSON mapping's "82".
    assert (doc["pod"], doc["numa_nodes"], doc["score"]) == ("default/web", 2, 82)
