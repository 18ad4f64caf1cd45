"""The real CLI in a subprocess (``python -m kubeletemu``), and pods to give it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.daemon.daemon_process import REPO, DaemonProcess

# The make_daemon fixture: make_daemon() starts the real daemon on the sample topology.
MakeDaemon = Callable[..., DaemonProcess]


def kubeletemu(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
    python: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """``python [python...] -m kubeletemu ARGS`` with no daemon named by the environment unless ``env``
    names one; 80 columns, as a terminal's help is read."""
    full = {k: v for k, v in os.environ.items() if k not in ("KUBELETEMU_SOCKET", "KUBELETEMU_CONFIG")}
    full.update(PYTHONPATH=str(REPO), COLUMNS="80", **(env or {}))
    return subprocess.run(
        [sys.executable, *python, "-m", "kubeletemu", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=full,
        cwd=cwd,
        check=False,
    )


def pod(name: str, cpu: str = "2", namespace: str = "prod") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n"
        f'  containers:\n  - name: app\n    resources:\n      limits: {{cpu: "{cpu}", memory: 1Gi}}\n'
    )
