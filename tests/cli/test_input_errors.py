"""Issue 27 item 10 (the colon): an error in a file names the file, then the path inside it, each followed
by a colon, as every other input error does (``bad.yaml: pod "bad" (document 1): …``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.support import kubeletemu
from tests.daemon.daemon_process import REPO

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

EXAMPLE = REPO / "kubeletemu" / "data" / "examples" / "fleet-reserve-cache.yaml"


def test_a_bad_pod_template_in_a_fleet_file(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    good = 'limits: {cpu: "4", memory: 8Gi}'
    assert good in text  # the example's first template, "small"
    (tmp_path / "badfleet2.yaml").write_text(text.replace(good, "limits: {cpu: two, memory: 8Gi}", 1))
    out = kubeletemu("fleet", "-f", "badfleet2.yaml", "--workers", "1", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (
        'kubeletemu: badfleet2.yaml: workload.templates[0].pod: pod "small" (document 1): '
        'spec.containers[0].resources.limits.cpu: invalid quantity "two"\n'
    )


def test_a_bad_pod_step_in_a_simulation_file(tmp_path: Path) -> None:
    (tmp_path / "sim.yaml").write_text(
        "apiVersion: kubeletemu.io/v1alpha1\nkind: Simulation\n"
        "topology: {synthetic: {sockets: 1, coresPerSocket: 2, threadsPerCore: 1, nodesPerSocket: 1}}\n"
        "stream:\n"
        "- pod: {metadata: {name: a}, spec: {containers: [{name: c, resources: {limits: {cpu: x}}}]}}\n"
    )
    out = kubeletemu("simulate", "-f", "sim.yaml", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith('kubeletemu: sim.yaml: stream[0].pod: pod "a" (document 1): '), out.stderr
