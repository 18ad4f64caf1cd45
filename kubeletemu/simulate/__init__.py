"""``kubeletemu simulate``: replay a stream of pods on one topology (or on forks of a live node, which
start with its pods) under a matrix of Topology Manager policies × scopes × options, and compare density,
fragmentation and cross-NUMA spread.

Pure engine (no gRPC, no CLI): inputs (``inputs``, ``spec``), the run (``engine``), end-of-stream metrics
(``metrics``), and the outputs: a text table and JSON (``render``). The PNG chart is drawn from the JSON
by ``kubeletemu.plot.simulation_chart`` (matplotlib, the optional extra ``[plot]``).
"""

from kubeletemu.simulate.engine import (
    AdmissionEvent,
    ConfigurationResult,
    RemovalEvent,
    SimulationReport,
    run_configuration,
    run_simulation,
    simulate,
    simulate_live,
)
from kubeletemu.simulate.errors import SimulationError
from kubeletemu.simulate.inputs import Configuration, Matrix, PodStep, RemoveStep, Step
from kubeletemu.simulate.render import render_json, render_table
from kubeletemu.simulate.topology import TopologySource, synthetic_shape

__all__ = [
    "AdmissionEvent",
    "Configuration",
    "ConfigurationResult",
    "Matrix",
    "PodStep",
    "RemovalEvent",
    "RemoveStep",
    "SimulationError",
    "SimulationReport",
    "Step",
    "TopologySource",
    "render_json",
    "render_table",
    "run_configuration",
    "run_simulation",
    "simulate",
    "simulate_live",
    "synthetic_shape",
]
