"""The simulation's one error class: bad input (a spec, a manifest, a topology source), one readable line."""

from __future__ import annotations


class SimulationError(ValueError):
    """``str()`` names the file and the field, e.g.
    ``sim.yaml: stream[2].repeat: expected an integer, got a string``."""
