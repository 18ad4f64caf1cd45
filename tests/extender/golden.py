"""Writes (or checks) the extender wire's golden files with the Go program of each pinned kube-scheduler
version: ``python -m tests.extender.golden [--check]``.

For every case of :mod:`tests.extender.wire_cases`, ``golden/<version>/<verb>-<case>``:

* ``.request.json``: the request body kube-scheduler's HTTPExtender sends (``wire encode-request``);
* ``.reply.json``: the case's reply as Go's ``json.Marshal`` writes what ``json.NewDecoder(..).Decode`` read
  from it (``wire decode-reply``'s canonical form), byte for byte, no newline (a body);
* ``.reads.json``: what the scheduler makes of that reply (reply.go), indented.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path

from tests.extender import gowire
from tests.extender.wire_cases import CASES, Case

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
SUFFIXES = (".request.json", ".reply.json", ".reads.json")


def reads_text(reads: object) -> str:
    return json.dumps(reads, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def case_files(wire: gowire.Wire, case: Case) -> dict[str, bytes]:
    """The three golden files of ``case`` by name, as ``wire`` makes them."""
    request = wire.encode_request(case.verb, case.description)
    decoded = wire.decode_reply(case.verb, case.description, json.dumps(case.reply).encode())
    if decoded.canonical is None:
        raise gowire.WireError(f"{case.stem}: Go cannot decode the reply: {decoded.reads}")
    return {
        f"{case.stem}.request.json": request,
        f"{case.stem}.reply.json": decoded.canonical,
        f"{case.stem}.reads.json": reads_text(decoded.reads).encode(),
    }


def version_files(wire: gowire.Wire, cases: Iterable[Case] = CASES) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for case in cases:
        files |= case_files(wire, case)
    return files


def stale(directory: Path, files: dict[str, bytes]) -> list[str]:
    """The files of ``directory`` that differ from ``files``, are missing, or are not among them."""
    present = {p.name for p in directory.glob("*.json")} if directory.is_dir() else set()
    differ = [
        name for name, data in files.items() if name not in present or (directory / name).read_bytes() != data
    ]
    return sorted(differ + [name for name in present if name not in files])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.extender.golden", description=__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is not current")
    args = parser.parse_args(argv)
    outdated = 0
    for pin in gowire.WIRE_PINS:
        wire = gowire.ensure(pin)
        directory = GOLDEN_DIR / pin.version
        files = version_files(wire)
        names = stale(directory, files)
        outdated += len(names)
        if args.check:
            for name in names:
                print(f"{directory / name}: not current", file=sys.stderr)
            continue
        directory.mkdir(parents=True, exist_ok=True)
        for name in names:
            path = directory / name
            if name in files:
                path.write_bytes(files[name])
            else:
                path.unlink()
        print(f"{directory}: {len(files)} files, {len(names)} written or removed", file=sys.stderr)
    return 1 if args.check and outdated else 0


if __name__ == "__main__":
    sys.exit(main())
