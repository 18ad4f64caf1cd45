"""The fleet's ``extender`` setup (kube-scheduler's default profile asking ``kubeletemu extender``'s own
code on the simulated clock), through ``kubeletemu fleet`` as a user runs it, on the example
kubeletemu/data/examples/fleet-extender-ledger.yaml (tests/realfleet's ten nodes of two 8-CPU NUMA nodes,
CPU 0 reserved, single-numa-node; a 20 ms binding cycle and a 100 ms watch; a stream of 2-, 4- and 6-CPU
Guaranteed pods that outgrows the nodes), on two of its seeds: seed 6, where Prioritize giving several
nodes the top score let the scheduler bind another node than the one the ledger charged, and seed 8, where
a batch hint bypassed the extender's Filter (each made the extender's pods bounce before its fix):

- the default scheduler's pods bounce with TopologyAffinityError; through the extender none does;
- the ledger is what keeps in-flight pods counted: with entries closed at once (a 1 ms TTL) the extender
  places pods on nodes that the in-flight ones already fill, and the kubelet refuses some;
- closing on the TTL alone charges finished pods for the whole TTL: pods wait where the agents' reports
  would have freed room;
- the run is the same JSON to the byte twice, and its configuration checked like every other.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubeletemu.fleet.cycle.extender import ExtenderSettings
from kubeletemu.fleet.spec import FleetError, parse_fleet

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = (REPO / "kubeletemu" / "data" / "examples" / "fleet-extender-ledger.yaml").read_text()
SCHEDULERS = EXAMPLE[EXAMPLE.index("schedulers:\n") : EXAMPLE.index("workload:\n")]


def fleet_text(schedulers: str = "[default, extender, extender-ttl, extender-no-ledger]") -> str:
    assert "matrix:\n  seeds: [1, 2, 3, 4, 5]" in EXAMPLE
    return EXAMPLE.replace("seeds: [1, 2, 3, 4, 5]", f"seeds: [6, 8]\n  schedulers: {schedulers}")


def run(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu", "fleet", "-f", str(path), "-o", "json", "--workers", "2"],
        capture_output=True, text=True, check=False, timeout=900,
    )  # fmt: skip


def by_setup(stdout: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for result in json.loads(stdout)["configurations"]:
        out.setdefault(result["name"].split("/")[0], []).append(result)
    return out


def test_the_extender_bounces_no_pod_and_its_ledger_is_what_keeps_in_flight_pods_counted(
    tmp_path: Path,
) -> None:
    first = run(tmp_path, fleet_text())
    assert first.returncode == 0, first.stderr
    runs = by_setup(first.stdout)

    def errors(setup: str) -> list[int]:
        return [r["topology_affinity_errors"] for r in runs[setup]]

    assert min(errors("default")) > 100
    assert errors("extender") == [0, 0]
    assert sum(errors("extender-no-ledger")) > 0
    # The TTL alone holds a finished pod's room for 60 s: far more pods never start in the run.
    never = {setup: sum(r["never_running"] for r in runs[setup]) for setup in ("extender", "extender-ttl")}
    assert never["extender-ttl"] > 10 * max(1, never["extender"]), never
    again = run(tmp_path, fleet_text())
    assert again.stdout == first.stdout


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ("{closeOn: never}", "schedulers[0].args.closeOn: expected one of agent-report, ttl, got 'never'"),
        ("{weight: 0}", "schedulers[0].args.weight: must be positive, got 0"),
        ("{ttl: 0s}", "schedulers[0].args.ttl: must be positive, got '0s'"),
        (
            "{bind: true}",
            "schedulers[0].args.bind: unknown field: expected one of weight, closeOn, ttl, feedLatency",
        ),
    ],
)
def test_a_bad_extender_argument_names_its_field(args: str, problem: str) -> None:
    text = fleet_text("[x]").replace(
        SCHEDULERS, f"schedulers:\n- {{name: x, model: extender, args: {args}}}\n"
    )
    with pytest.raises(FleetError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_fleet(text, "fleet.yaml")


def test_the_extender_args_default_as_documented() -> None:
    text = fleet_text("[x]").replace(SCHEDULERS, "schedulers:\n- {name: x, model: extender}\n")
    [config, *_] = parse_fleet(text, "fleet.yaml").configurations()
    assert (config.kind, config.extender) == ("extender", ExtenderSettings(10, "agent-report", 60.0, 0.05))
