"""Start-up of the ``kubeletemu`` command (issue 27 item 3): wall time of whole processes, as a user waits.

Run: .venv/bin/python benchmarks/bench_cli.py [--rounds 30]

Every command is run once per round, in turn, so that a machine whose load changes during the run shifts
all of them alike; each figure is the median over the rounds, and its ratio is to ``python -c pass`` (the
same interpreter, the same site-packages) measured in the same run. Target: ``kubeletemu --version`` and
``kubeletemu list`` (against a daemon this script starts with ``serve --sample``) within 3×. The CLI's
clients speak HTTP/2 themselves (:mod:`kubeletemu.cli.wire`); what a grpcio client would pay before any
call (``import grpc`` and the stubs) is measured for comparison, and the protobuf runtime with the message
classes, which commands that send a pod (``would-admit``) loaded to build their requests until they encoded
them from the generated schema (:mod:`kubeletemu.cli.wire.protoenc`), as are grpcurl's
``-version`` (a Go binary) and the system's ``python3 -c pass`` for reference.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import fmt

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: prod}
spec:
  containers:
  - name: app
    resources:
      limits: {cpu: "2", memory: 1Gi}
"""


def kubeletemu_command() -> list[str]:
    """The console script beside this interpreter, as pip installed it; else ``python -m kubeletemu``."""
    script = Path(sys.executable).parent / "kubeletemu"
    return [str(script)] if script.exists() else [sys.executable, "-m", "kubeletemu"]


def run(argv: list[str], env: dict[str, str], expect: int = 0) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}, expected {expect}: {done.stderr!r}")
    return elapsed


def start_daemon(kubeletemu: list[str], workdir: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    socket = workdir / "k.sock"
    daemon = subprocess.Popen(
        [*kubeletemu, "serve", "--sample", "--socket", str(socket), "--state-dir", str(workdir / "state")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready = subprocess.run(
            [*kubeletemu, "list", "--socket", str(socket)], env=env, capture_output=True, check=False
        )
        if ready.returncode == 0:
            return daemon
        if daemon.poll() is not None:
            raise SystemExit(f"the daemon exited with status {daemon.returncode}")
        time.sleep(0.2)
    daemon.terminate()
    raise SystemExit("the daemon did not answer within 60 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()

    # PYTHONDONTWRITEBYTECODE (set on some CI machines) would have every run compile every module from
    # source; an installed package has its .pyc files, so they are written in the warm-up round and used.
    dropped = ("KUBELETEMU_SOCKET", "KUBELETEMU_CONFIG", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    kubeletemu = kubeletemu_command()
    python = sys.executable
    stubs = "import kubeletemu._proto.kubeletemu.v1.admission_pb2_grpc"
    messages = "import kubeletemu._proto.kubeletemu.v1.admission_pb2"
    with tempfile.TemporaryDirectory(prefix="kbench-", dir="/tmp") as tmp:
        workdir = Path(tmp)
        socket = str(workdir / "k.sock")
        (workdir / "pod.yaml").write_text(POD)
        cases: dict[str, tuple[list[str], int]] = {
            "python -c pass (reference)": ([python, "-c", "pass"], 0),
            "kubeletemu --version": ([*kubeletemu, "--version"], 0),
            "kubeletemu --help": ([*kubeletemu, "--help"], 0),
            "kubeletemu list": ([*kubeletemu, "list", "--socket", socket], 0),
            "kubeletemu list -o json": ([*kubeletemu, "list", "-o", "json", "--socket", socket], 0),
            "kubeletemu topology": ([*kubeletemu, "topology", "--socket", socket], 0),
            "kubeletemu would-admit -f pod.yaml": (
                [*kubeletemu, "would-admit", "-f", str(workdir / "pod.yaml"), "--socket", socket],
                0,
            ),
            "kubeletemu list, no daemon (exit 3)": (
                [*kubeletemu, "list", "--socket", str(workdir / "nobody.sock")],
                3,
            ),
            "python -c 'import grpc'": ([python, "-c", "import grpc"], 0),
            "python -c 'import grpc + stubs' (a grpcio client)": ([python, "-c", stubs], 0),
            # The protobuf runtime and the message classes: what would-admit loaded to encode its request.
            "python -c 'import message stubs' (protobuf)": ([python, "-c", messages], 0),
        }
        system_python = shutil.which("python3", path="/usr/bin:/bin")
        if system_python:
            cases["system python3 -c pass"] = ([system_python, "-c", "pass"], 0)
        grpcurl = shutil.which("grpcurl") or shutil.which("grpcurl", path=str(Path(python).parent))
        if grpcurl:
            cases["grpcurl -version"] = ([grpcurl, "-version"], 0)

        daemon = start_daemon(kubeletemu, workdir, env)
        try:
            samples: dict[str, list[float]] = {name: [] for name in cases}
            for argv, expect in cases.values():  # warm the page cache and the .pyc files
                run(argv, env, expect)
            for _ in range(args.rounds):
                for name, (argv, expect) in cases.items():
                    samples[name].append(run(argv, env, expect))
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=30)

    reference = statistics.median(samples["python -c pass (reference)"])
    print(f"{args.rounds} rounds; kubeletemu = {' '.join(kubeletemu)}")
    print(f"{'command':50s} {'median':>11s} {'p90':>11s}  × python -c pass")
    for name, times in samples.items():
        times.sort()
        median, p90 = statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.9))]
        print(f"{name:50s} {fmt(median)} {fmt(p90)}  {median / reference:5.2f}×")
    for name in ("kubeletemu --version", "kubeletemu list"):
        ratio = statistics.median(samples[name]) / reference
        print(f"target {name} within 3× python -c pass: {'met' if ratio <= 3 else 'NOT met'} ({ratio:.2f}×)")


if __name__ == "__main__":
    main()
