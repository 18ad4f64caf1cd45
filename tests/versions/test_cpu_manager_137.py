"""The CPU Manager changes 1.37 brings (k8s.io/kubernetes v1.37.2), each on both sides of 1.36:

* ``cpumanager.distribute-align-by-socket``: ``takeByTopologyNUMADistributed(..., alignBySocket)``
  (kubernetes#139778) prefers NUMA nodes of one socket when ``align-by-socket`` is set too; 1.36's ignores it;
* ``cpumanager.smt-check-after-restored``: ``allocateForAdd`` reuses a container's CPUs found in the state
  before the SMT check of ``full-pcpus-only``; 1.36's ``Allocate`` checks first and refuses.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hostprobe.synthetic import SyntheticHost
from kubeletemu.cpumanager import StaticPolicy
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import SMTAlignmentError
from kubeletemu.cpumanager.state import MemoryState
from kubeletemu.cpumanager.topology import CPUTopology
from kubeletemu.versions.behaviours import behaviours, in_effect
from tests.cpumanager.helpers import FixedStore, container, pod
from tests.nodes import probe_machine

# 2 sockets of 2 NUMA nodes of 2 single-thread cores: NUMA 0 = {0, 1} and 1 = {2, 3} on socket 0,
# NUMA 2 = {4, 5} and 3 = {6, 7} on socket 1.
FOUR_NUMA = SyntheticHost(sockets=2, cores_per_socket=4, threads_per_core=1, nodes_per_socket=2)
# 1 socket, 4 cores of 2 threads (siblings n and n+4).
SMT = SyntheticHost(sockets=1, cores_per_socket=4, threads_per_core=2)


def topology(tmp_path: Path, host: SyntheticHost) -> CPUTopology:
    return probe_machine(tmp_path, host).cpu_topology


def test_both_rows_registered_at_137() -> None:
    for key in ("cpumanager.distribute-align-by-socket", "cpumanager.smt-check-after-restored"):
        assert [c.since for c in behaviours()[key].changes] == ["1.37"]
        assert [in_effect(key, v) for v in ("1.36", "1.37", "master")] == [False, True, True]


@pytest.mark.parametrize(("version", "expected"), [("1.36", [0, 4]), ("1.37", [0, 2]), ("master", [0, 2])])
def test_distribute_across_numa_honours_align_by_socket_from_137(
    tmp_path: Path, version: str, expected: list[int]
) -> None:
    """CPUs 0, 2 and 4 free (NUMA 0, 1, 2), two wanted over two NUMA nodes: every pair balances alike, so
    1.36 takes the first, NUMA 0 and 2 across the sockets; 1.37 prefers NUMA 0 and 1 of socket 0."""
    options = {"distribute-cpus-across-numa": "true", "align-by-socket": "true"}
    policy = StaticPolicy(
        topology(tmp_path, FOUR_NUMA),
        0,
        None,
        FixedStore(),
        options,
        {"CPUManagerPolicyAlphaOptions": True},
        version,
    )
    assert policy.take_by_topology(CPUSet.parse("0,2,4"), 2).list() == expected


@pytest.mark.parametrize(("version", "kept"), [("1.36", False), ("1.37", True), ("master", True)])
def test_a_restored_assignment_is_kept_before_the_smt_check_from_137(
    tmp_path: Path, version: str, kept: bool
) -> None:
    """``full-pcpus-only`` and a container of 3 CPUs (not whole cores) whose CPUs are already in the state,
    as after a restart with the option newly set: 1.36 refuses it, 1.37 keeps what it has."""
    policy = StaticPolicy(
        topology(tmp_path, SMT), 0, None, FixedStore(), {"full-pcpus-only": "true"}, None, version
    )
    state = MemoryState()
    policy.start(state)
    state.set_cpu_set("uid-a", "c", CPUSet.parse("1-3"))
    state.set_default_cpu_set(CPUSet.parse("0,4-7"))
    subject = pod("uid-a", [container("c", 3)])
    if kept:
        policy.allocate(state, subject, subject.containers[0])
        assert state.get_cpu_set("uid-a", "c") == CPUSet.parse("1-3")
    else:
        with pytest.raises(SMTAlignmentError):
            policy.allocate(state, subject, subject.containers[0])
