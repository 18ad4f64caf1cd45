"""kubeletemu.protogen: the committed stubs are exactly what the regenerator produces, and they import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubeletemu import protogen

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "kubeletemu" / "_proto"


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _python(code: str, *path: Path) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter (fresh default descriptor pool) with ``path`` first on sys.path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in path)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=path[0], env=env, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("proto-out")
    assert protogen.main(["--out", str(out)]) == 0
    return out


def test_committed_stubs_are_byte_identical_to_a_fresh_run(regenerated: Path) -> None:
    fresh, committed = _tree(regenerated), _tree(COMMITTED)
    assert sorted(fresh) == sorted(committed), "run: python -m kubeletemu.protogen"
    for rel, data in fresh.items():
        assert committed[rel] == data, f"{rel} is stale; run: python -m kubeletemu.protogen"
    assert "podresources/v1/api_pb2_grpc.py" in fresh
    assert "podresources/v1alpha1/api_pb2.pyi" in fresh


def test_check_mode_reports_no_drift_for_the_committed_tree(capsys: pytest.CaptureFixture[str]) -> None:
    assert protogen.main(["--check", "--out", str(COMMITTED)]) == 0
    assert capsys.readouterr().err == ""


def test_check_mode_reports_drift(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "stubs"
    assert protogen.main(["--out", str(out)]) == 0
    (out / "podresources" / "v1" / "api_pb2.py").write_text("# edited\n")
    (out / "podresources" / "old_pb2.py").write_text("# no .proto any more\n")
    (out / "podresources" / "hand_written.py").write_text("# not ours\n")
    assert protogen.main(["--check", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "podresources/v1/api_pb2.py" in err
    assert "podresources/old_pb2.py" in err
    assert "hand_written" not in err
    # A real run repairs the edit, prunes the stale stub and leaves foreign files alone.
    assert protogen.main(["--out", str(out)]) == 0
    assert not (out / "podresources" / "old_pb2.py").exists()
    assert (out / "podresources" / "hand_written.py").exists()
    assert protogen.main(["--check", "--out", str(out)]) == 0


def test_fresh_import_of_the_committed_stubs() -> None:
    proc = _python(
        "from kubeletemu._proto.podresources.v1 import api_pb2, api_pb2_grpc\n"
        "from kubeletemu._proto.podresources.v1alpha1 import api_pb2 as a1, api_pb2_grpc as a1_grpc\n"
        "svc = api_pb2.DESCRIPTOR.services_by_name['PodResourcesLister']\n"
        "print(api_pb2.DESCRIPTOR.name, svc.full_name)\n"
        "print(a1.DESCRIPTOR.services_by_name['PodResourcesLister'].full_name)\n"
        "print(api_pb2_grpc.PodResourcesListerServicer.__name__, a1_grpc.PodResourcesListerStub.__name__)\n",
        REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n") == [
        "podresources/v1/api.proto v1.PodResourcesLister",
        "v1alpha1.PodResourcesLister",
        "PodResourcesListerServicer PodResourcesListerStub",
        "",
    ]


def test_generated_imports_use_the_package_path() -> None:
    grpc_stub = (COMMITTED / "podresources" / "v1" / "api_pb2_grpc.py").read_text()
    assert "from kubeletemu._proto.podresources.v1 import api_pb2 as " in grpc_stub
    assert "\nfrom podresources" not in grpc_stub


def test_adding_a_proto_is_just_adding_a_file(tmp_path: Path) -> None:
    """A service proto importing a sibling, a root-level file and a well-known type compiles and imports."""
    protos = tmp_path / "protos"
    (protos / "common").mkdir(parents=True)
    (protos / "kubeletemu" / "v1").mkdir(parents=True)
    (protos / "common" / "types.proto").write_text(
        'syntax = "proto3";\npackage common;\nmessage Thing { string name = 1; }\n'
    )
    (protos / "top.proto").write_text('syntax = "proto3";\npackage top;\nmessage Top { int64 x = 1; }\n')
    (protos / "kubeletemu" / "v1" / "admission.proto").write_text(
        'syntax = "proto3";\npackage kubeletemu.v1;\n'
        'import "google/protobuf/empty.proto";\nimport "common/types.proto";\nimport "top.proto";\n'
        "message Req { common.Thing thing = 1; top.Top top = 2; }\n"
        "service Admission { rpc Admit(Req) returns (google.protobuf.Empty) {} }\n"
    )
    site = tmp_path / "site"
    out = site / "pkg" / "gen"
    assert protogen.main(["--protos", str(protos), "--out", str(out), "--package", "pkg.gen"]) == 0
    (site / "pkg" / "__init__.py").write_text("")
    files = _tree(out)
    assert {"__init__.py", "top_pb2.py", "kubeletemu/v1/admission_pb2_grpc.py"} <= set(files)
    svc = files["kubeletemu/v1/admission_pb2.py"].decode()
    assert "from google.protobuf import empty_pb2 as " in svc  # well-known types stay where they are
    assert "from pkg.gen.common import types_pb2 as " in svc
    assert "from pkg.gen import top_pb2 as " in svc
    proc = _python(
        "from pkg.gen.kubeletemu.v1 import admission_pb2 as a, admission_pb2_grpc as g\n"
        "req = a.Req(thing={'name': 'x'}, top={'x': 3})\n"
        "print(req.SerializeToString().hex(), g.AdmissionStub.__name__)\n",
        site,
    )
    assert proc.returncode == 0, proc.stderr
    # field 1 {field 1 "x"}, field 2 {field 1 varint 3}
    assert proc.stdout.split() == ["0a030a017812020803", "AdmissionStub"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("from a.b import c_pb2 as a_dot_b_dot_c__pb2", "from p.q.a.b import c_pb2 as a_dot_b_dot_c__pb2"),
        ("from a.b import c_pb2 as _c_pb2", "from p.q.a.b import c_pb2 as _c_pb2"),
        ("import top_pb2 as top__pb2", "from p.q import top_pb2 as top__pb2"),
        ("from a.b.c_pb2 import Thing as Thing", "from p.q.a.b.c_pb2 import Thing as Thing"),
        ("from google.protobuf import empty_pb2 as e", "from google.protobuf import empty_pb2 as e"),
        ("from a.b import other_pb2 as o", "from a.b import other_pb2 as o"),  # not generated here
        ("import grpc", "import grpc"),
        ("    x = 'from a.b import c_pb2'", "    x = 'from a.b import c_pb2'"),
    ],
)
def test_rewrite_imports(line: str, expected: str) -> None:
    generated = frozenset({"a.b.c_pb2", "a.b.c_pb2_grpc", "top_pb2"})
    assert protogen.rewrite_imports(line + "\n", generated, "p.q") == expected + "\n"


@pytest.mark.parametrize("line", ["import top_pb2", "from a.b import c_pb2, other_pb2"])
def test_rewrite_refuses_what_it_cannot_map(line: str) -> None:
    with pytest.raises(protogen.ProtogenError, match="cannot rewrite"):
        protogen.rewrite_imports(line, frozenset({"top_pb2", "a.b.c_pb2"}), "p.q")


def test_errors_are_one_readable_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert protogen.main(["--protos", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.proto").write_text('syntax = "proto3";\nmessage X { nonsense }\n')
    assert protogen.main(["--protos", str(tmp_path / "bad"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("protogen: protoc failed") and "x.proto" in err
    assert not (tmp_path / "o").exists()
