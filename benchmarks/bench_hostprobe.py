"""Time ``hostprobe.probe`` on the 300-PCI-device OpenShift capture (target: median under 200 ms).

Run: ``.venv/bin/python benchmarks/bench_hostprobe.py [--runs N]``. The capture is read from
``tests/fixtures/sysfs`` (or ``$KUBELETEMU_FIXTURES``) and extracted to a temporary directory.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import hostprobe  # noqa: E402
from tests.hostprobe.hostprobe_capture_support import capture_archive  # noqa: E402

CAPTURE = "ocp-worker-2s20c2t-cascadelake"
TARGET_MEDIAN_MS = 200.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    tarball = capture_archive(CAPTURE)
    if not tarball.is_file():
        print(f"bench_hostprobe: {tarball} not found", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(tarball) as archive:
            archive.extractall(tmp, filter="data")
        sys_root, proc_root = Path(tmp, CAPTURE, "sys"), Path(tmp, CAPTURE, "proc")
        topology = hostprobe.probe(sys_root, proc_root)  # warm-up (imports, dentry cache)
        timings = []
        for _ in range(args.runs):
            start = time.perf_counter()
            hostprobe.probe(sys_root, proc_root)
            timings.append((time.perf_counter() - start) * 1000)
    timings.sort()
    median = statistics.median(timings)
    p90 = timings[min(len(timings) - 1, round(0.9 * (len(timings) - 1)))]
    print(
        f"hostprobe.probe({CAPTURE}): {len(topology.pci_devices)} PCI devices, {len(topology.cpus)} CPUs, "
        f"{len(topology.numa_nodes)} nodes; {args.runs} runs"
    )
    print(
        f"median {median:.1f} ms, p90 {p90:.1f} ms, min {timings[0]:.1f} ms "
        f"(target: median < {TARGET_MEDIAN_MS:.0f} ms)"
    )
    return 0 if median < TARGET_MEDIAN_MS else 1


if __name__ == "__main__":
    sys.exit(main())
