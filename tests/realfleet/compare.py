"""Real beside simulated: the same Fleet file's configurations run on a real cluster (:mod:`.cluster`) and
through ``kubeletemu fleet``'s engine, each measure summarised over the seeds with the fleet's statistics
(:func:`kubeletemu.fleet.stats.interval`: the mean and Student's t 95 % interval) and the two set side by
side. Two figures agree when their intervals overlap (:func:`kubeletemu.fleet.stats.separated` is false).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeletemu.fleet.distributions import FIXED, Distribution
from kubeletemu.fleet.engine import run_configuration
from kubeletemu.fleet.report import figure_text
from kubeletemu.fleet.spec import ConfigurationSpec, FleetSpec, ReplicaSetSpec
from kubeletemu.fleet.stats import interval, separated

# The measures compared, as result keys, with their labels.
MEASURES: tuple[tuple[str, str], ...] = (
    ("topology_affinity_errors", "TopologyAffinityError"),
    ("scheduling_attempts", "scheduling attempts"),
    ("time_to_running_p50_s", "time to Running p50"),
    ("time_to_running_p99_s", "time to Running p99"),
    ("pending_p99_s", "pending p99"),
)

Figure = Mapping[str, float | None]


@dataclass(frozen=True)
class Row:
    setup: str
    measure: str
    label: str
    real: Figure
    simulated: Figure

    @property
    def agrees(self) -> bool:
        return not separated(self.real, self.simulated)


def configurations(
    spec: FleetSpec, scheduler: str, seeds: Sequence[int] | None = None
) -> list[ConfigurationSpec]:
    """The file's configurations of one scheduler (every seed of its matrix, or ``seeds``)."""
    chosen = [c for c in spec.configurations() if c.scheduler == scheduler]
    if seeds is not None:
        chosen = [c for c in chosen if c.seed in seeds]
    if not chosen:
        raise ValueError(f"{spec.source}: no configuration of scheduler {scheduler!r} with seeds {seeds}")
    return chosen


def simulate(configs: Sequence[ConfigurationSpec]) -> list[dict[str, Any]]:
    return [run_configuration(c) for c in configs]


def calibrated(config: ConfigurationSpec, real: Mapping[str, Any]) -> ConfigurationSpec:
    """The configuration with the latencies its real run showed (medians, :meth:`RealRun.latencies`):
    the start-up latency a bound pod took to Running, and the ReplicaSet's reaction to a Failed pod split
    evenly between its informer and its sync. What still differs then is not these latencies."""
    startup = Distribution(FIXED, float(real["bind_to_running_p50_s"]))
    replica_set = config.controllers.replica_set
    if real["replacements"]:  # else nothing was measured: the file's delays (0 would replace in no time)
        half = float(real["replacement_p50_s"]) / 2
        replica_set = ReplicaSetSpec(half, half)
    return dataclasses.replace(
        config,
        workload=dataclasses.replace(config.workload, startup_latency=startup),
        controllers=dataclasses.replace(config.controllers, replica_set=replica_set),
    )


def rows(setup: str, real: Sequence[Mapping[str, Any]], simulated: Sequence[Mapping[str, Any]]) -> list[Row]:
    """Each measure over the seeds, real beside simulated. A percentile that pods which never reached
    Running decide is censored (None: "> run length", :mod:`kubeletemu.fleet.censored`): such seeds are left
    out of that side's interval, and the label says how many."""
    found = []
    for key, label in MEASURES:
        real_values = [float(r[key]) for r in real if r[key] is not None]
        simulated_values = [float(r[key]) for r in simulated if r[key] is not None]
        sides = (("real", len(real), real_values), ("simulated", len(simulated), simulated_values))
        censored = [f"{side} {n - len(v)} of {n} seeds > run length" for side, n, v in sides if len(v) < n]
        shown = f"{label} ({'; '.join(censored)}, left out)" if censored else label
        found.append(Row(setup, key, shown, interval(real_values), interval(simulated_values)))
    return found


def table(all_rows: Sequence[Row], note: Callable[[Row], str] = lambda row: "") -> str:
    """A Markdown table: setup, measure, real, simulated, and whether they agree (else the note)."""
    lines = [
        "| setup | measure | real | simulated | agree |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in all_rows:
        seconds = row.measure.endswith("_s")
        verdict = "yes" if row.agrees else f"**no** {note(row)}".rstrip()
        lines.append(
            f"| {row.setup} | {row.label} | {figure_text(row.real, seconds=seconds)} | "
            f"{figure_text(row.simulated, seconds=seconds)} | {verdict} |"
        )
    return "\n".join(lines)


def per_seed(setup: str, real: Sequence[Mapping[str, Any]], simulated: Sequence[Mapping[str, Any]]) -> str:
    """Each seed's figures, real then simulated (to see what an interval is made of)."""
    keys = [k for k, _ in MEASURES]
    lines = [f"{setup}: per seed (real / simulated): " + ", ".join(keys)]
    for r, s in zip(real, simulated, strict=True):
        pairs = ", ".join(f"{_value(r[k])} / {_value(s[k])}" for k in keys)
        lines.append(f"  seed {r['seed']}: {pairs}")
    return "\n".join(lines)


def _value(value: float | None) -> str:
    return "> run length" if value is None else f"{value:g}"
