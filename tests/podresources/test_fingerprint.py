"""kubeletemu.podresources.fingerprint beyond the conformance table: Check edge cases, errors, tracing,
the exporters' pod-set methods and the set-change property."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.pod import Container, Pod
from kubeletemu.podresources import fingerprint as pfp

PODS = [("ns1", "n1"), ("ns1", "n2"), ("ns2", "n1"), ("ns3", "n1"), ("ns3", "n2")]
SIGN = "pfp0v001b92008c14168b3a6"  # tracing-5pods
EMPTY = "pfp0v001ef46db3751d8e999"


# --- Check ----------------------------------------------------------------------------------------------


def test_error_texts_are_the_librarys() -> None:
    with pytest.raises(pfp.MalformedFingerprintError, match=r"^malformed fingerprint$"):
        pfp.check("x", PODS)
    with pytest.raises(pfp.IncompatibleVersionError, match=r"^incompatible version$"):
        pfp.check("pfp0v002b92008c14168b3a6", PODS)
    with pytest.raises(pfp.FingerprintMismatchError) as caught:
        pfp.check("pfp0v001b92008c14168b3a7", PODS)
    assert str(caught.value) == 'fingerprint mismatch got="b92008c14168b3a6" expected="b92008c14168b3a7"'
    assert (caught.value.got, caught.value.expected) == ("b92008c14168b3a6", "b92008c14168b3a7")


@pytest.mark.parametrize(
    ("sign", "error"),
    [
        ("", pfp.MalformedFingerprintError),
        ("pfp0v001b92008c", pfp.MalformedFingerprintError),  # 15 bytes
        ("pfp0v001b92008c1", pfp.FingerprintMismatchError),  # 16 bytes: long enough, wrong sum
        ("pfp1v001b92008c14168b3a6", pfp.MalformedFingerprintError),
        ("PFP0v001b92008c14168b3a6", pfp.MalformedFingerprintError),
        ("pfp0V001b92008c14168b3a6", pfp.IncompatibleVersionError),  # versions compare exactly
        ("pfp0v001B92008C14168B3A6", pfp.FingerprintMismatchError),  # the sum is case-sensitive
        ("pfp0v001b92008c14168b3a6 ", pfp.FingerprintMismatchError),
        ("pfp0v001b92008c14168b3a600", pfp.FingerprintMismatchError),
        # Go measures and slices bytes: 12 characters but 16 bytes reach the sum comparison ...
        ("pfp0v001éééé", pfp.FingerprintMismatchError),
        # ... and a 2-byte character straddling the version field is an incompatible version, not a crash.
        ("pfp0vé01b92008c14168b3a6", pfp.IncompatibleVersionError),
        ("pfp0ééé", pfp.MalformedFingerprintError),  # 10 bytes
    ],
)
def test_check_precedence_and_byte_semantics(sign: str, error: type[Exception]) -> None:
    with pytest.raises(pfp.FingerprintError) as caught:
        pfp.check(sign, PODS)
    assert type(caught.value) is error


def test_check_accepts_the_right_value_and_every_error_is_a_fingerprint_error() -> None:
    pfp.check(SIGN, PODS)
    pfp.check(SIGN, reversed(PODS))
    pfp.check(EMPTY, [])
    for cls in (pfp.MalformedFingerprintError, pfp.IncompatibleVersionError, pfp.FingerprintMismatchError):
        assert issubclass(cls, pfp.FingerprintError)
    # Distinct classes: none catches another.
    assert not issubclass(pfp.FingerprintMismatchError, ValueError)
    assert not issubclass(pfp.IncompatibleVersionError, pfp.MalformedFingerprintError)


def test_mismatch_text_quotes_like_go() -> None:
    with pytest.raises(pfp.FingerprintMismatchError) as caught:
        pfp.check('pfp0v001\x00"\\\tabc\u00e9\u200b\U0001f600x', PODS)
    assert str(caught.value) == (
        'fingerprint mismatch got="b92008c14168b3a6" expected="\\x00\\"\\\\\\tabcé\\u200b😀x"'
    )


def test_invalid_utf8_is_escaped_byte_by_byte_like_go() -> None:
    # A lone surrogate stands for bytes that are not UTF-8 (ed a0 80): %q escapes each, json makes U+FFFDs.
    with pytest.raises(pfp.FingerprintMismatchError, match=r'expected="\\xed\\xa0\\x80abcdefgh"$'):
        pfp.check("pfp0v001\ud800abcdefgh", PODS)
    assert pfp.Status(node_name="a\ud800").to_json() == '{"nodeName":"a\\ufffd\\ufffd\\ufffd"}'


def test_non_string_fingerprint_is_malformed() -> None:
    with pytest.raises(pfp.MalformedFingerprintError):
        pfp.check(None, PODS)  # type: ignore[arg-type]
    with pytest.raises(pfp.MalformedFingerprintError):
        pfp.Fingerprint().check(b"pfp0v001ef46db3751d8e999")  # type: ignore[arg-type]


def test_is_version_compatible() -> None:
    assert pfp.is_version_compatible("v001")
    assert not pfp.is_version_compatible("v002")
    with pytest.raises(pfp.MalformedFingerprintError):
        pfp.is_version_compatible("v01")


# --- bad pod identities ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pods", "message"),
    [
        ([("ns",)], r"must be a \(namespace, name\) pair, got \('ns',\)"),
        (["nsname"], r"must be a \(namespace, name\) pair, got 'nsname'"),
        ([("ns", None)], r"pair of str, got \('ns', None\)"),
        ([(b"ns", "a")], r"pair of str, got \(b'ns', 'a'\)"),
        ([(["ns"], "a")], r"pair of str"),
        ([("ns", "a\ud800")], r"not encodable as UTF-8"),
        ([None], r"pair, got None"),
    ],
)
def test_invalid_pods_get_a_readable_error(pods: list[object], message: str) -> None:
    with pytest.raises(pfp.InvalidPodError, match=message):
        pfp.compute(pods)  # type: ignore[arg-type]
    with pytest.raises(pfp.InvalidPodError):
        pfp.check(EMPTY, pods)  # type: ignore[arg-type]
    assert issubclass(pfp.InvalidPodError, TypeError)


# --- the incremental object -----------------------------------------------------------------------------


def test_adding_after_sign_reflects_the_grown_set() -> None:
    fp = pfp.Fingerprint()
    assert fp.sign() == EMPTY
    for namespace, name in PODS[:3]:
        fp.add(namespace, name)
    partial = fp.sign()
    for namespace, name in PODS[3:]:
        fp.add(namespace, name)
    assert partial != SIGN
    assert fp.sign() == SIGN
    assert fp.sign() == SIGN  # signing is repeatable
    assert len(fp) == 5
    assert fp.sum() == bytes.fromhex("b92008c14168b3a6")
    fp.reset()
    assert (len(fp), fp.sign()) == (0, EMPTY)


def test_add_all_equals_add_in_a_loop() -> None:
    fp = pfp.Fingerprint()
    fp.add_all(iter(PODS[:2]))
    fp.add_all(PODS[2:])
    assert fp.sign() == SIGN
    status = pfp.Status()
    traced = pfp.TracingFingerprint(status)
    traced.add("ns1", "n1")
    traced.add_all(PODS[1:])
    assert traced.sign() == SIGN
    assert status.pods == [pfp.NamespacedName(*p) for p in PODS]
    with pytest.raises(pfp.InvalidPodError):
        traced.add_all([("ns", "ok"), ("ns", 7)])  # type: ignore[list-item]
    assert len(status.pods) == 5  # nothing of a rejected batch is traced or added
    assert traced.sign() == SIGN


def test_add_pod_takes_podresources_messages_and_pods() -> None:
    fp = pfp.Fingerprint()
    fp.add_pod(v1.PodResources(namespace="ns1", name="n1"))
    fp.add_pod(Pod(name="n2", namespace="ns1", uid="u", containers=(Container("c"),)))
    for namespace, name in PODS[2:]:
        fp.add(namespace, name)
    assert fp.sign() == SIGN


def test_pod_hash_is_seeded_not_concatenated() -> None:
    assert pfp.pod_hash("ab", "c") != pfp.pod_hash("a", "bc")
    assert pfp.pod_hash("ns1", "n1") == 0x6FE7D8DA4B8352C3


# --- the set-change property ----------------------------------------------------------------------------

# A tiny alphabet makes equal multisets (and near-misses) common, so both branches get exercised.
_names = st.text(alphabet="ab-é", max_size=3)
_pod_lists = st.lists(st.tuples(_names, _names), max_size=8)


@given(_pod_lists, _pod_lists)
def test_fingerprint_changes_exactly_when_the_pod_multiset_changes(
    a: list[tuple[str, str]], b: list[tuple[str, str]]
) -> None:
    assert (pfp.compute(a) == pfp.compute(b)) == (Counter(a) == Counter(b))


@given(_pod_lists, st.randoms(use_true_random=False), st.tuples(_names, _names))
def test_permutation_keeps_and_any_edit_changes(
    pods: list[tuple[str, str]], rnd: random.Random, extra: tuple[str, str]
) -> None:
    sign = pfp.compute(pods)
    shuffled = list(pods)
    rnd.shuffle(shuffled)
    assert pfp.compute(shuffled) == sign
    assert pfp.compute([*pods, extra]) != sign  # adding, even a duplicate, changes it
    if pods:
        assert pfp.compute(pods[1:]) != sign  # removing changes it
        renamed = [(pods[0][0], pods[0][1] + "x"), *pods[1:]]
        assert pfp.compute(renamed) != sign
        moved = [(pods[0][0] + "x", pods[0][1]), *pods[1:]]
        assert pfp.compute(moved) != sign


# --- tracing --------------------------------------------------------------------------------------------


def test_status_records_pods_in_add_order_and_both_values() -> None:
    status = pfp.make_status("node-a")
    fp = pfp.TracingFingerprint(status)
    for namespace, name in reversed(PODS):
        fp.add(namespace, name)
    assert status.fingerprint_computed == ""
    assert fp.sign() == SIGN
    assert status.fingerprint_computed == SIGN
    with pytest.raises(pfp.FingerprintMismatchError):
        fp.check(EMPTY)
    assert status.fingerprint_expected == EMPTY  # recorded before the verdict
    assert [str(p) for p in status.pods] == [f"{ns}/{n}" for ns, n in reversed(PODS)]
    assert status.repr().splitlines()[-1] == f"V {EMPTY}"


def test_status_repr_without_check_and_go_quoted_node_name() -> None:
    status = pfp.make_status('node "a"\n')
    fp = pfp.TracingFingerprint(status)
    fp.add("ns", "p")
    fp.sign()
    sign = pfp.compute([("ns", "p")])
    assert status.repr() == f'> processing node "node \\"a\\"\\n"\n> processing 1 pods\n+ ns/p\n= {sign}\n'
    assert pfp.Status().repr() == '> processing node ""\n> processing 0 pods\n= \n'


def test_status_json_omits_empty_fields_and_escapes_like_go() -> None:
    assert pfp.Status().to_json() == "{}"
    status = pfp.Status(node_name="n<1>&", pods=[pfp.NamespacedName("ns-é", "a\u2028b\n")])
    assert status.to_json() == (
        '{"pods":[{"Namespace":"ns-é","Name":"a\\u2028b\\n"}],"nodeName":"n\\u003c1\\u003e\\u0026"}'
    )
    assert list(_traced().to_dict()) == ["fingerprintComputed", "pods", "nodeName"]


def _traced() -> pfp.Status:
    status = pfp.make_status("node")
    fp = pfp.TracingFingerprint(status)
    fp.add("ns", "p")
    fp.sign()
    return status


def test_status_start_and_clone() -> None:
    status = _traced()
    clone = status.clone()
    status.add("ns", "q")
    assert [p.name for p in clone.pods] == ["p"]
    assert clone == pfp.Status(
        fingerprint_computed=pfp.compute([("ns", "p")]),
        pods=[pfp.NamespacedName("ns", "p")],
        node_name="node",
    )
    status.start(3)
    assert status.pods == []


def test_null_tracer_changes_nothing() -> None:
    fp = pfp.TracingFingerprint(pfp.NullTracer())
    for namespace, name in PODS:
        fp.add(namespace, name)
    assert fp.sign() == SIGN
    fp.check(SIGN)


def test_completion_sink_gets_a_clone() -> None:
    received: list[pfp.Status] = []
    status = _traced()
    pfp.mark_completed(status)  # no sink: nothing happens
    pfp.set_completion_sink(received.append)
    try:
        pfp.mark_completed(status)
    finally:
        pfp.clean_completion_sink()
    pfp.mark_completed(status)
    assert received == [status]
    assert received[0] is not status
    status.add("ns", "late")
    assert len(received[0].pods) == 1


# --- methods --------------------------------------------------------------------------------------------

LISTED = [
    pfp.PodInfo("ns1", "gu-pod", phase="Running", exclusive=True),
    pfp.PodInfo("ns2", "bu-pod", phase="Running"),
    pfp.PodInfo("ns3", "done-gu", phase="Succeeded", exclusive=True),
    pfp.PodInfo("ns3", "failed", phase="Failed"),
    pfp.PodInfo("ns4", "unknown-phase"),
]


@pytest.mark.parametrize(
    ("method", "exclude_terminal_pods", "expected"),
    [
        ("all", False, ["gu-pod", "bu-pod", "done-gu", "failed", "unknown-phase"]),
        ("with-exclusive-resources", False, ["gu-pod", "done-gu"]),
        ("exclude-terminal", False, ["gu-pod", "bu-pod", "unknown-phase"]),
        ("all", True, ["gu-pod", "bu-pod", "unknown-phase"]),
        ("with-exclusive-resources", True, ["gu-pod"]),
        ("ALL", False, ["gu-pod", "bu-pod", "done-gu", "failed", "unknown-phase"]),
    ],
)
def test_select_pods(method: str, exclude_terminal_pods: bool, expected: list[str]) -> None:
    selected = pfp.select_pods(LISTED, method, exclude_terminal_pods=exclude_terminal_pods)
    assert [p.name for p in selected] == expected


def test_unsupported_method() -> None:
    assert pfp.parse_method("With-Exclusive-Resources") == pfp.METHOD_WITH_EXCLUSIVE_RESOURCES
    with pytest.raises(pfp.UnsupportedMethodError, match=r'^unsupported method  "foobar"$'):
        pfp.select_pods(LISTED, "foobar")
    with pytest.raises(pfp.UnsupportedMethodError):
        pfp.parse_method("only-exclusive-resources")  # the scheduler's enum name, not a method
    assert issubclass(pfp.UnsupportedMethodError, ValueError)


def test_fingerprint_pods_worked_example() -> None:
    # podresources-and-fingerprints.md §4.3: {ns1/gu-pod} exclusive, {ns1/gu-pod, ns2/bu-pod} all.
    listed = [pfp.PodInfo("ns1", "gu-pod", exclusive=True), pfp.PodInfo("ns2", "bu-pod")]
    sign, status = pfp.fingerprint_pods(listed, node_name="worker-0")
    assert sign == "pfp0v001cfae40fe3a0d9250"
    assert status.to_dict() == {
        "fingerprintComputed": sign,
        "pods": [{"Namespace": "ns1", "Name": "gu-pod"}],
        "nodeName": "worker-0",
    }
    sign_all, status_all = pfp.fingerprint_pods(listed, pfp.METHOD_ALL)
    assert sign_all == "pfp0v0016713c6757092b15b"
    assert len(status_all.pods) == 2
    assert pfp.fingerprint_pods([], pfp.METHOD_ALL)[0] == EMPTY


# --- numa_locality (RTE numalocality.Verify) ------------------------------------------------------------


def _topo(*ids: int) -> v1.TopologyInfo:
    return v1.TopologyInfo(nodes=[v1.NUMANode(ID=i) for i in ids])


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        ([], None),
        ([v1.ContainerResources(name="c")], None),
        ([v1.ContainerResources(name="c", cpu_ids=[3])], ("c", "cpu")),
        ([v1.ContainerResources(name="c", memory=[v1.ContainerMemory(memory_type="memory", size=1)])], None),
        (
            [
                v1.ContainerResources(
                    name="c", memory=[v1.ContainerMemory(memory_type="memory", topology=_topo())]
                )
            ],
            None,
        ),
        ([v1.ContainerResources(name="c", memory=[v1.ContainerMemory(topology=_topo(-1))])], None),
        (
            [v1.ContainerResources(name="c", memory=[v1.ContainerMemory(topology=_topo(-1, 0))])],
            ("c", "memory"),
        ),
        ([v1.ContainerResources(name="c", devices=[v1.ContainerDevices(device_ids=["d0"])])], None),
        ([v1.ContainerResources(name="c", devices=[v1.ContainerDevices(topology=_topo(0))])], None),
        (
            [
                v1.ContainerResources(
                    name="c", devices=[v1.ContainerDevices(device_ids=["d0"], topology=_topo(1))]
                )
            ],
            ("c", "device"),
        ),
        # The first qualifying container wins; within it CPUs are checked before memory and devices.
        (
            [
                v1.ContainerResources(name="shared"),
                v1.ContainerResources(
                    name="c2",
                    cpu_ids=[1],
                    devices=[v1.ContainerDevices(device_ids=["d0"], topology=_topo(1))],
                ),
                v1.ContainerResources(name="c3", cpu_ids=[2]),
            ],
            ("c2", "cpu"),
        ),
    ],
)
def test_numa_locality(containers: list[v1.ContainerResources], expected: tuple[str, str] | None) -> None:
    pod = v1.PodResources(name="p", namespace="ns", containers=containers)
    assert pfp.numa_locality(pod) == expected
    assert pfp.has_exclusive_resources(pod) is (expected is not None)


def test_numa_locality_ignores_pod_level_fields_and_none() -> None:
    pod = v1.PodResources(
        name="p", namespace="ns", cpu_ids=[1, 2], containers=[v1.ContainerResources(name="c")]
    )
    assert pfp.numa_locality(pod) is None
    assert pfp.numa_locality(None) is None
