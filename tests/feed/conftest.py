"""Fixtures of the feed tests: the bundled sample topology the daemon probes (as in tests/daemon)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hostprobe.sample import write_sample_tree


@pytest.fixture(scope="session")
def sample_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    sys_root, proc_root = write_sample_tree(tmp_path_factory.mktemp("sample"))
    return Path(sys_root), Path(proc_root)
