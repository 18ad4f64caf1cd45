"""Which kubelet version a shadow mirror emulates: the real kubelet's, asked of its binary (issue 16).

``kubelet --version`` prints ``Kubernetes v1.35.2`` (k8s.io/component-base ``version/verflag``:
``fmt.Printf("%s %s\\n", programName, version.Get())`` with programName ``Kubernetes``; vendor builds add a
suffix such as ``v1.35.2-eks-1234``). The minor picks the version emulated:

* a supported minor (1.33 … 1.37) is emulated as itself (never as ``master``, which shares 1.37's binary
  version but carries changes 1.37.2 does not have);
* a newer kubelet (``v1.38.0``) is beyond what is known: ``master`` is emulated, and reported;
* an older one (``v1.32.4``), a binary that is missing, fails, hangs or prints something else: reported,
  and the configured ``kubeletVersion`` is emulated.

``--kubelet-version`` on ``serve`` wins over the binary (source ``flag``); ``kubeletBinary: ""`` turns
detection off (source ``setting``).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from kubeletemu.versions.gates import binary_version
from kubeletemu.versions.version import MASTER, SUPPORTED

DEFAULT_KUBELET_BINARY = "/usr/bin/kubelet"
SOURCE_BINARY = "binary"
SOURCE_FLAG = "flag"
SOURCE_SETTING = "setting"
# Seconds: the kubelet prints its version and exits at once; a hung binary must not hold up start-up.
VERSION_TIMEOUT = 10.0

_OUTPUT_RE = re.compile(r"Kubernetes (v(\d+)\.(\d+)\.(\d+)\S*)")


@dataclass(frozen=True)
class KubeletVersionChoice:
    """The version emulated (``version``), how it was chosen (``source``), what the binary said
    (``reported``: ``v1.35.2``, "" when it did not say) and why the binary did not decide (``note``)."""

    version: str
    source: str
    binary: str = ""
    reported: str = ""
    note: str = ""


def _minor_key(version: str) -> tuple[int, int]:
    major, minor = binary_version(version).split(".")[:2]
    return int(major), int(minor)


def version_from_output(output: str) -> tuple[str, str, str]:
    """``(reported, emulated, note)`` for what ``kubelet --version`` printed; ``emulated`` is "" when the
    output names no usable version (``note`` then says why)."""
    match = _OUTPUT_RE.search(output)
    if match is None:
        shown = output.strip().splitlines()[0] if output.strip() else "nothing"
        return "", "", f"printed {shown!r}, not 'Kubernetes vX.Y.Z'"
    reported = match.group(1)
    key = (int(match.group(2)), int(match.group(3)))
    for version in SUPPORTED:
        if version != MASTER and _minor_key(version) == key:
            return reported, version, ""
    master = _minor_key(MASTER)
    if key > master:
        return (
            reported,
            MASTER,
            (
                f"kubelet {reported} is newer than the newest known version "
                f"({binary_version(MASTER)}, master); emulating master"
            ),
        )
    return reported, "", f"kubelet {reported} is older than the oldest supported version ({SUPPORTED[0]})"


def detect_kubelet_version(
    binary: str | None,
    configured: str,
    pinned: str | None = None,
    timeout: float = VERSION_TIMEOUT,
) -> KubeletVersionChoice:
    """The version to emulate beside the kubelet whose binary is ``binary`` (None: detection off).

    ``pinned`` (a parsed ``--kubelet-version``) wins without running anything; otherwise the binary is run
    with ``--version`` and, when it cannot tell, ``configured`` (the ``kubeletVersion`` setting) is used
    and ``note`` says why.
    """
    if pinned is not None:
        return KubeletVersionChoice(pinned, SOURCE_FLAG, binary or "")
    if binary is None:
        return KubeletVersionChoice(configured, SOURCE_SETTING)
    fallback = f"; emulating the configured kubeletVersion {configured}"
    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        note = f"kubelet binary {binary}: not found (set kubeletBinary to its path){fallback}"
        return KubeletVersionChoice(configured, SOURCE_SETTING, binary, note=note)
    except PermissionError:
        note = f"kubelet binary {binary}: permission denied (not executable by this process){fallback}"
        return KubeletVersionChoice(configured, SOURCE_SETTING, binary, note=note)
    except subprocess.TimeoutExpired:
        note = f"kubelet binary {binary} --version: no answer within {timeout:g}s{fallback}"
        return KubeletVersionChoice(configured, SOURCE_SETTING, binary, note=note)
    except OSError as err:
        note = f"kubelet binary {binary}: {err.strerror or err}{fallback}"
        return KubeletVersionChoice(configured, SOURCE_SETTING, binary, note=note)
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        detail = f": {said[0]}" if said else ""
        note = f"kubelet binary {binary} --version exited with status {done.returncode}{detail}{fallback}"
        return KubeletVersionChoice(configured, SOURCE_SETTING, binary, note=note)
    reported, emulated, note = version_from_output(done.stdout)
    if not emulated:
        return KubeletVersionChoice(
            configured, SOURCE_SETTING, binary, reported, f"kubelet binary {binary}: {note}{fallback}"
        )
    return KubeletVersionChoice(emulated, SOURCE_BINARY, binary, reported, note)
