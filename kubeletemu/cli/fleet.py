"""``kubeletemu fleet -f FILE``: the fleet what-if (:mod:`kubeletemu.fleet`), each run of the file's matrix
(a setup under a seed, :mod:`kubeletemu.fleet.setups`) in a local process pool (``--workers``) or on a
Ray cluster (``--ray``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kubeletemu.cli.common import EXIT_OK, add_file_arguments, fail

# What a shell reports for a command ended by SIGINT (128 + 2), as ``main`` returns for a bare ^C.
EXIT_INTERRUPTED = 130


def cmd_fleet(args: argparse.Namespace) -> int:
    from kubeletemu.fleet.parallel import Interrupted, RunnerError, require_ray, run_many
    from kubeletemu.fleet.report import render_csv, render_json, render_table, render_wide, render_yaml
    from kubeletemu.fleet.spec import FleetError, load_fleet

    [path] = args.files if len(args.files) == 1 else fail("fleet takes one -f file")
    if args.workers is not None and args.workers < 1:
        fail(f"--workers: must be at least 1, got {args.workers}")
    if args.chart:
        from kubeletemu.plot import PlotUnavailable, require_matplotlib

        try:
            require_matplotlib()  # before any work
        except PlotUnavailable as err:
            fail(str(err))
    if args.ray:
        try:
            require_ray()  # before any work, as for the charts
        except RunnerError as err:
            fail(str(err))
    try:
        configs = load_fleet(path).configurations()
    except FleetError as err:
        fail(str(err))
    interrupted: Interrupted | None = None
    try:
        results = run_many(configs, workers=args.workers, ray_address=args.ray, progress=True)
    except Interrupted as err:  # ^C: what finished is still shown (and charted), then one line, exit 130
        interrupted, results = err, err.results
    except RunnerError as err:  # a run failed (ConfigurationFailed), or Ray is unreachable or gone
        fail(str(err), 1)
    if interrupted is not None and not results:
        fail(str(interrupted), EXIT_INTERRUPTED)
    render = {
        "table": render_table,
        "wide": render_wide,
        "json": render_json,
        "yaml": render_yaml,
        "csv": render_csv,
    }[args.output]
    text = render(results)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()
    if args.chart:
        from kubeletemu.plot import PlotInputError, fleet_charts

        try:
            fleet_charts(results, Path(args.chart))
        except OSError as err:
            fail(f"{args.chart}: {err.strerror or err}")
        except PlotInputError as err:
            fail(str(err), 1)
    if interrupted is not None:
        fail(str(interrupted), EXIT_INTERRUPTED)
    return EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fleet = sub.add_parser(
        "fleet",
        help="what-if for a fleet of nodes, schedulers and caches",
        description="A fleet of exact nodes under schedulers and their NRT caches, on a simulated clock: "
        "each setup of the file's matrix run once per seed, with TopologyAffinityError counts and pending "
        "times.",
    )
    add_file_arguments(fleet, "a kind: Fleet YAML file")
    fleet.add_argument(
        "-o",
        "--output",
        choices=("table", "wide", "json", "yaml", "csv"),
        default="table",
        help="%(choices)s (default %(default)s): table is a row per setup, wide adds a row per run (seed)",
    )
    fleet.add_argument("--chart", metavar="DIR", help="also write PNG charts into this directory")
    fleet.add_argument(
        "--workers", type=int, metavar="N", help="local worker processes (default: the CPU count; 1: here)"
    )
    fleet.add_argument("--ray", metavar="ADDRESS", help='each run a Ray task ("auto" or an address)')
    fleet.set_defaults(func=cmd_fleet)
