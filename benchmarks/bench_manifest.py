"""Median time to read pod manifests as kubectl prints them: one pod (YAML and JSON) and a 100-pod List.

Run: .venv/bin/python benchmarks/bench_manifest.py [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._timing import fmt, measure
from kubeletemu.manifest import parse_pods, pod_to_manifest
from tests.test_manifest import KUBECTL_POD


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()

    pod = yaml.safe_load(KUBECTL_POD)
    items = [
        {**pod, "metadata": {**pod["metadata"], "name": f"app-{i}", "uid": f"uid-{i}"}} for i in range(100)
    ]
    listing_yaml = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})
    cases = {
        "kubectl get pod -o yaml (1 pod)": KUBECTL_POD,
        "kubectl get pod -o json (1 pod)": json.dumps(pod, indent=4),
        "kubectl get pods -o yaml (100 pods)": listing_yaml,
        "kubectl get pods -o json (100 pods)": json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": items}
        ),
    }
    print(f"libyaml: {yaml.__with_libyaml__}")
    for name, text in cases.items():
        median, p90 = measure(lambda text=text: parse_pods(text), repeat=args.rounds)
        print(f"{name:40s} median {fmt(median)}   p90 {fmt(p90)}")
    pods = parse_pods(listing_yaml)
    median, p90 = measure(lambda: [pod_to_manifest(p) for p in pods], repeat=args.rounds)
    print(f"{'pod_to_manifest (100 pods)':40s} median {fmt(median)}   p90 {fmt(p90)}")


if __name__ == "__main__":
    main()
