"""docs/fleet.md "Which informer flushes", through ``kubeletemu fleet`` as a user runs it: the reserve cache's
Dedicated and Shared pod informers on a fifth of the worked example (5 nodes of its shape, 120 pods at 0.4
a second, seed 1), per kubelet version and fingerprint method."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.fleet.conftest import EXAMPLE
from tests.fleet.test_mechanisms import KUBELETEMU

pytestmark = pytest.mark.slow

EXPORTERS = {
    "with-exclusive-resources": (
        "exporter:\n  type: resource-topology-exporter\n  period: 10s\n  notifyFile: true\n"
        "  maxEventsPerSecond: 1\n  fingerprintMethod: with-exclusive-resources\n"
    ),
    "all": (
        "exporter:\n  type: resource-topology-exporter\n  period: 10s\n  notifyFile: true\n"
        "  maxEventsPerSecond: 1\n  fingerprintMethod: all\n"
    ),
    "nfd": "exporter:\n  type: nfd-topology-updater\n  period: 60s\n",
}
FLUSHES, STALLS = "flushes", "stalls"


def _fifth(version: str, exporter: str) -> str:
    text = EXAMPLE.read_text().replace('kubeletVersion: "1.36"', f'kubeletVersion: "{version}"')
    text = re.sub(r"exporter:\n(  .*\n)+", EXPORTERS[exporter], text)
    for old, new in (("count: 25", "count: 5"), ("total: 600", "total: 120"), ("rate: 2\n", "rate: 0.4\n")):
        assert old in text
        text = text.replace(old, new)
    return text.replace("seeds: [1, 2, 3, 4, 5]", "seeds: [1]\n  schedulers: [reserve, reserve-shared]")


@pytest.mark.parametrize(
    ("version", "exporter", "dedicated", "shared"),
    [
        ("1.33", "all", FLUSHES, STALLS),
        ("1.33", "nfd", FLUSHES, STALLS),
        # An ended pod's memory stays listed until the node's next admission: the Shared informer, which
        # counts Running pods only, stalls too (it flushed when the fleet released resources at the exit).
        ("1.33", "with-exclusive-resources", STALLS, STALLS),
        ("1.36", "with-exclusive-resources", STALLS, FLUSHES),
        ("1.36", "nfd", STALLS, FLUSHES),
    ],
)
def test_which_informer_flushes_per_kubelet_version_and_fingerprint_method(
    tmp_path: Path, version: str, exporter: str, dedicated: str, shared: str
) -> None:
    """A stalled cache ends with every node's fingerprint mismatched and a good part of the pods never
    Running; a flushing one places (nearly) every pod."""
    (tmp_path / "fleet.yaml").write_text(_fifth(version, exporter))
    out = subprocess.run(
        [*KUBELETEMU, "fleet", "-f", str(tmp_path / "fleet.yaml"), "-o", "json", "--workers", "1"],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    runs = {r["scheduler"]: r for r in json.loads(out.stdout)["configurations"]}
    for scheduler, expected in (("reserve", dedicated), ("reserve-shared", shared)):
        run = runs[scheduler]
        assert run["kubelet_versions"] == [version]
        outcome = (
            STALLS
            if len(run["fingerprint_mismatch_at_end"]) == 5 and run["never_running"] > 10
            else FLUSHES
            if run["never_running"] <= 5
            else "neither"
        )
        assert outcome == expected, (scheduler, run["never_running"], run["fingerprint_mismatch_at_end"])
