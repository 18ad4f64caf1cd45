"""``python -m kubeletemu.versions.table``: rewrite the documented kubelet-version table from the data.

The table sits between ``<!-- version-table:begin -->`` and ``<!-- version-table:end -->`` in
docs/kubelet-versions.md and is :func:`kubeletemu.versions.behaviours.table_markdown`'s output, so the page
and the registry cannot drift (a test compares them). ``--check`` only reports whether the page is current
(exit 1 if not).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from kubeletemu.versions.behaviours import table_markdown

BEGIN = "<!-- version-table:begin -->"
END = "<!-- version-table:end -->"
DEFAULT_PAGE = Path(__file__).resolve().parents[2] / "docs" / "kubelet-versions.md"


class TableMarkersError(ValueError):
    """The page lacks the markers, or has them more than once or out of order."""


def with_table(text: str, table: str, where: str = "README.md") -> str:
    """``text`` with the part between the markers replaced by ``table`` (blank lines around it)."""
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise TableMarkersError(f"{where}: needs exactly one {BEGIN} and one {END}")
    start = text.index(BEGIN) + len(BEGIN)
    end = text.index(END)
    if end < start:
        raise TableMarkersError(f"{where}: {END} comes before {BEGIN}")
    return text[:start] + "\n\n" + table + "\n" + text[end:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubeletemu.versions.table", description=__doc__)
    parser.add_argument(
        "--readme",
        type=Path,
        default=DEFAULT_PAGE,
        help="the Markdown page to rewrite (default: docs/kubelet-versions.md)",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is not current")
    args = parser.parse_args(argv)
    path: Path = args.readme
    try:
        text = path.read_text(encoding="utf-8")
        updated = with_table(text, table_markdown(), str(path))
    except (OSError, TableMarkersError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if updated == text:
        print(f"{path}: version table is current")
        return 0
    if args.check:
        print(f"{path}: version table differs from the data; run python -m kubeletemu.versions.table")
        return 1
    path.write_text(updated, encoding="utf-8")
    print(f"{path}: version table rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
