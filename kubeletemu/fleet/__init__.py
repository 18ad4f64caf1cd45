"""The fleet what-if (``kubeletemu fleet``): many exact nodes, their NRT exporters, and schedulers with
their caches on a simulated clock, compared by TopologyAffinityError against pending time.

:func:`~kubeletemu.fleet.spec.load_fleet` reads a ``kind: Fleet`` file into a
:class:`~kubeletemu.fleet.spec.FleetSpec`; its ``configurations()`` are run by
:func:`~kubeletemu.fleet.engine.run_configuration` (one each, in any process) and rendered by
:mod:`kubeletemu.fleet.report`.
"""

from kubeletemu.fleet.spec import ConfigurationSpec, FleetError, FleetSpec, load_fleet, parse_fleet

__all__ = ["ConfigurationSpec", "FleetError", "FleetSpec", "load_fleet", "parse_fleet"]
