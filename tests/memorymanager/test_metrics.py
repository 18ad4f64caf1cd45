"""memory_manager_pinning_{requests,errors}_total as the static policy's Allocate counts them: every container
of a Guaranteed pod is a request (the already-allocated shortcut included), each failure also an error;
other pods and the None policy count nothing."""

from __future__ import annotations

import pytest

from kubeletemu.memorymanager import MemoryAllocationError, MemoryManagerMetrics, new_manager
from kubeletemu.pod import Container
from kubeletemu.quantity import Quantity
from tests.memorymanager.fixtures import MACHINE, StoreStub, guaranteed, pod
from tests.memorymanager.test_static_policy import manager


def test_guaranteed_containers_are_pinning_requests_and_failures_errors() -> None:
    mm = manager(StoreStub())
    assert mm.metrics() == MemoryManagerMetrics(0, 0)
    p = pod("p", guaranteed("a"), guaranteed("b"), init=(guaranteed("i"),))
    for c in p.all_containers():
        mm.allocate(p, c)
    assert mm.metrics() == MemoryManagerMetrics(3, 0)
    mm.allocate(p, p.containers[0])  # already in the state: still a request
    assert mm.metrics() == MemoryManagerMetrics(4, 0)
    too_big = pod("q", guaranteed("c", memory="20Gi"))
    with pytest.raises(MemoryAllocationError):
        mm.allocate(too_big, too_big.containers[0])
    assert mm.metrics() == MemoryManagerMetrics(5, 1)


def test_other_pods_and_the_none_policy_count_nothing() -> None:
    mm = manager(StoreStub())
    burstable = pod("b", Container("c", requests={"memory": Quantity.parse("1Gi")}))
    mm.allocate(burstable, burstable.containers[0])
    assert mm.metrics() == MemoryManagerMetrics(0, 0)
    none = new_manager("None", MACHINE, StoreStub())
    p = pod("p", guaranteed("c"))
    none.allocate(p, p.containers[0])
    assert none.metrics() == MemoryManagerMetrics(0, 0)
