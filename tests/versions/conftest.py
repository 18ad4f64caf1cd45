"""The synthetic machines the kubelet-version tests admit on, each probed once per test module."""

from __future__ import annotations

import pytest

from hostprobe.synthetic import SyntheticHost
from kubeletemu.machine import Machine
from tests.nodes import probe_machine

# 2 NUMA nodes of 4 cores x 2 threads: node n holds CPUs 4n .. 4n+3 and their siblings 4n+8 .. 4n+11
# (SyntheticHost numbers every core's first thread, then the second threads).
TWO_NODES = SyntheticHost(sockets=2, cores_per_socket=4, threads_per_core=2)
# 4 NUMA nodes of 2 cores x 2 threads: node n holds CPUs 2n, 2n+1 and their siblings 2n+8, 2n+9.
FOUR_NODES = SyntheticHost(sockets=4, cores_per_socket=2, threads_per_core=2)


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    return probe_machine(tmp_path_factory.mktemp("two"), TWO_NODES)


@pytest.fixture(scope="module")
def four_nodes(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    return probe_machine(tmp_path_factory.mktemp("four"), FOUR_NODES)
