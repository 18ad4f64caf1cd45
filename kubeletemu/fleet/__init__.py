"""The fleet what-if (``kubeletemu fleet``): many exact nodes, their kubelets and NRT exporters, the
controllers, and schedulers with their queues and caches on a simulated clock, compared by
TopologyAffinityError against time to Running, over seeds.

:func:`~kubeletemu.fleet.spec.load_fleet` reads a ``kind: Fleet`` file into a
:class:`~kubeletemu.fleet.spec.FleetSpec`; its ``configurations()`` are run by
:func:`~kubeletemu.fleet.engine.run_configuration` (one each, in any process) and rendered by
:mod:`kubeletemu.fleet.report` with their summaries (:mod:`kubeletemu.fleet.stats`). The engine wires the
parts, laid out as a cluster's: :mod:`.queue` and :mod:`.cycle` (kube-scheduler), :mod:`.scheduler_queue`
(its informers' events into the queue), :mod:`.kubelet`, :mod:`.exporters`, :mod:`.controllers`,
:mod:`.workload`.
"""

from kubeletemu.fleet.spec import ConfigurationSpec, FleetError, FleetSpec, load_fleet, parse_fleet

__all__ = ["ConfigurationSpec", "FleetError", "FleetSpec", "load_fleet", "parse_fleet"]
