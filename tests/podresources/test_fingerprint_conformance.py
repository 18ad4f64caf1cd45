"""podfingerprint.json: every vector, Check() row, intermediate, tracing expectation and not-vector.

The file has no ``encoding`` field; its ``format``/``algorithm_summary`` describe it: pods are inline
``{namespace, name}`` objects, ``check_vectors``/``tracing_expectations`` name a vector by ``pods_ref``,
``intermediates`` is keyed by vector id and ``not_vectors`` are values that must NOT match.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import xxhash

from kubeletemu.podresources import fingerprint as pfp
from tests.conformance.loader import load, versioned_rows

TABLE: dict[str, Any] = load("podfingerprint")
VECTORS: dict[str, dict[str, Any]] = {v["id"]: v for v in TABLE["vectors"]}

CHECK_ERRORS: dict[str, type[Exception] | None] = {
    "ErrMalformed": pfp.MalformedFingerprintError,
    "ErrIncompatibleVersion": pfp.IncompatibleVersionError,
    "ErrSignatureMismatch": pfp.FingerprintMismatchError,
    "ok": None,
}


def pods_of(vector_id: str) -> list[tuple[str, str]]:
    return [(p["namespace"], p["name"]) for p in VECTORS[vector_id]["pods"]]


def test_table_shape() -> None:
    # Guards the parametrizations below against a truncated or reshaped file.
    assert len(TABLE["vectors"]) == 21
    assert len(VECTORS) == 21
    assert len(TABLE["check_vectors"]) == 6
    assert sorted(TABLE["intermediates"]) == [
        "compat-tiny-3pods-1ns",
        "rte-resourcemonitor-1pod",
        "tracing-5pods",
    ]
    assert len(TABLE["not_vectors"]) == 2
    assert all(len(v["pods"]) == v["pod_count"] for v in TABLE["vectors"])


# Every vector holds for every kubelet version (the library, not the kubelet, computes pfp0v001); the
# version only names the run.
@pytest.mark.parametrize(("vector", "version"), versioned_rows("podfingerprint", "vectors", key="id"))
def test_vector(vector: dict[str, Any], version: str) -> None:
    pods = [(p["namespace"], p["name"]) for p in vector["pods"]]
    assert pfp.compute(pods) == vector["expected"]
    # Order never matters: a shuffled list (seeded, so reproducible) signs the same.
    shuffled = list(pods)
    random.Random(vector["id"]).shuffle(shuffled)
    assert pfp.compute(shuffled) == vector["expected"]
    # The incremental object agrees with the one-shot function, and Check accepts the value.
    fp = pfp.Fingerprint()
    for namespace, name in pods:
        fp.add(namespace, name)
    assert fp.sign() == vector["expected"]
    fp.check(vector["expected"])
    pfp.check(vector["expected"], pods)


@pytest.mark.parametrize(
    ("row", "version"),
    versioned_rows(
        "podfingerprint",
        "check_vectors",
        key="fingerprint",
        label=lambda _, r: f"{r['expected']}-{r['fingerprint']}",
    ),
)
def test_check_vector(row: dict[str, Any], version: str) -> None:
    pods = pods_of(row["pods_ref"])
    error = CHECK_ERRORS[row["expected"]]
    if error is None:
        pfp.check(row["fingerprint"], pods)
        return
    with pytest.raises(pfp.FingerprintError) as caught:
        pfp.check(row["fingerprint"], pods)
    # Exact class: the three errors are distinct and none is a subclass of another.
    assert type(caught.value) is error, row["why"]


@pytest.mark.parametrize("vector_id", sorted(TABLE["intermediates"]))
def test_intermediates(vector_id: str) -> None:
    inter = TABLE["intermediates"][vector_id]
    for pod in inter["per_pod"]:
        # The namespace hash is the seed of the name hash (our xxhash build must agree with the vectors).
        assert f"{xxhash.xxh64_intdigest(pod['namespace'].encode()):016x}" == pod["namespace_hash_seed"]
        assert f"{pfp.pod_hash(pod['namespace'], pod['name']):016x}" == pod["pod_hash"]
    hashes = sorted(pfp.pod_hash(ns, name) for ns, name in pods_of(vector_id))
    assert [f"{h:016x}" for h in hashes] == inter["sorted_pod_hashes"]
    assert b"".join(h.to_bytes(8, "little") for h in hashes).hex() == inter["concatenated_le_bytes_hex"]
    fp = pfp.Fingerprint()
    for namespace, name in pods_of(vector_id):
        fp.add(namespace, name)
    assert fp.sum().hex() == inter["final_xxh64_hex_bigendian"]
    assert fp.sign() == pfp.PREFIX + pfp.VERSION + inter["final_xxh64_hex_bigendian"]


def _traced_status(node_name: str) -> pfp.Status:
    expectations = TABLE["tracing_expectations"]
    status = pfp.make_status(node_name)
    fp = pfp.TracingFingerprint(status)
    for namespace, name in pods_of(expectations["pods_ref"]):
        fp.add(namespace, name)
    fp.sign()
    fp.check(VECTORS[expectations["pods_ref"]]["expected"])
    return status


def test_tracing_status_json() -> None:
    status = _traced_status("")
    assert status.to_json() == TABLE["tracing_expectations"]["status_json_without_nodename"]


def test_tracing_status_repr() -> None:
    status = _traced_status("test-node")
    assert status.repr() == TABLE["tracing_expectations"]["status_repr_with_nodename_test-node"]


@pytest.mark.parametrize("row", TABLE["not_vectors"], ids=[r["fingerprint"] for r in TABLE["not_vectors"]])
def test_not_vector(row: dict[str, Any]) -> None:
    if "pods" in row:
        pods = [(ns, name) for ns, name in row["pods"]]
        assert pfp.compute(pods) != row["fingerprint"]
        assert pfp.compute(pods) == row["actual_fingerprint_of_those_pods"]
        with pytest.raises(pfp.FingerprintMismatchError):
            pfp.check(row["fingerprint"], pods)
    else:
        # No pod set comes with it (a different algorithm): it must match none of the real ones.
        for vector_id in VECTORS:
            with pytest.raises(pfp.FingerprintMismatchError):
                pfp.check(row["fingerprint"], pods_of(vector_id))
