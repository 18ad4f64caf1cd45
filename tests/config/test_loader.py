"""load_config: documents told apart by kind, in one file or several; errors name file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletemu.config import (
    ConfigError,
    EmulatorConfiguration,
    KubeletConfiguration,
    load_config,
    parse_config,
)

KUBELET = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\n"
EMULATOR = "apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\nlogLevel: debug\n"


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_one_file_two_documents(tmp_path: Path) -> None:
    path = write(tmp_path, "config.yaml", f"{KUBELET}---\n{EMULATOR}")
    config = load_config([path])
    assert config.kubelet.cpu_manager_policy == "static"
    assert config.emulator.log_level == "debug"
    assert config.origins == {
        "KubeletConfiguration": f"{path} (document 1)",
        "EmulatorConfiguration": f"{path} (document 2)",
    }


def test_two_files_in_either_order(tmp_path: Path) -> None:
    kubelet = write(tmp_path, "kubelet.yaml", KUBELET)
    emulator = write(tmp_path, "emulator.yaml", EMULATOR)
    for paths in ([kubelet, emulator], [emulator, kubelet]):
        config = load_config(paths)
        assert config.kubelet.cpu_manager_policy == "static"
        assert config.emulator.log_level == "debug"
        assert config.origins == {"KubeletConfiguration": kubelet, "EmulatorConfiguration": emulator}


def test_a_missing_kind_takes_its_defaults(tmp_path: Path) -> None:
    config = load_config([write(tmp_path, "kubelet.yaml", KUBELET)])
    assert config.emulator == EmulatorConfiguration()
    config = load_config([write(tmp_path, "emulator.yaml", EMULATOR)])
    assert config.kubelet == KubeletConfiguration()
    assert load_config([]).kubelet == KubeletConfiguration()


def test_empty_documents_are_skipped() -> None:
    config = parse_config(f"---\n{KUBELET}---\n---\n{EMULATOR}---\n", "c.yaml")
    assert config.origins == {
        "KubeletConfiguration": "c.yaml (document 1)",
        "EmulatorConfiguration": "c.yaml (document 3)",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "kind: KubeletConfiguration\ncpuManagerPolicy: static\n",
            "c.yaml: "
            "apiVersion: missing: KubeletConfiguration needs apiVersion kubelet.config.k8s.io/v1beta1",
            id="kubelet_no_api_version",
        ),
        pytest.param(
            "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n",
            "c.yaml: "
            "apiVersion: 'kubelet.config.k8s.io/v1' is not supported: KubeletConfiguration needs "
            "apiVersion kubelet.config.k8s.io/v1beta1",
            id="kubelet_wrong_api_version",
        ),
        pytest.param(
            "cpuManagerPolicy: static\n",
            "c.yaml: kind: required: expected KubeletConfiguration or EmulatorConfiguration",
            id="no_kind",
        ),
        pytest.param(
            "apiVersion: v1\nkind: ConfigMap\n",
            "c.yaml: "
            "kind: 'ConfigMap' is not supported: expected KubeletConfiguration or EmulatorConfiguration",
            id="other_kind",
        ),
        pytest.param(
            "kind: EmulatorConfiguration\napiVersion: kubeletemu.io/v1\n",
            "c.yaml: "
            "apiVersion: 'kubeletemu.io/v1' is not supported: EmulatorConfiguration needs apiVersion "
            "kubeletemu.io/v1alpha1",
            id="emulator_wrong_api_version",
        ),
        pytest.param(
            f"{KUBELET}---\n{KUBELET}",
            "c.yaml (document 2): kind: a second KubeletConfiguration; the first is in c.yaml (document 1)",
            id="duplicate_kind",
        ),
        pytest.param(
            "- cpuManagerPolicy: static\n",
            "c.yaml: expected a mapping with apiVersion and kind, got list",
            id="not_a_mapping",
        ),
        pytest.param(
            f"{EMULATOR}---\n{KUBELET}maxPods: -3\n",
            "c.yaml (document 2): maxPods: invalid configuration: maxPods (--max-pods) -3 must not be "
            "a negative number",
            id="field_error_names_the_document",
        ),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(text, "c.yaml")
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_yaml_syntax_error_names_line_and_column() -> None:
    # The problem text is the parser's (libyaml's or PyYAML's); the position is ours.
    with pytest.raises(ConfigError, match=r"^c\.yaml: invalid YAML: .*']'.* \(line 3, column 1\)$"):
        parse_config("kind: KubeletConfiguration\ncpuManagerPolicy: [static\n", "c.yaml")


def test_duplicate_kind_across_files(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", KUBELET)
    second = write(tmp_path, "b.yaml", KUBELET)
    with pytest.raises(
        ConfigError, match=f"^{second}: kind: a second KubeletConfiguration; the first is in {first}$"
    ):
        load_config([first, second])


def test_unreadable_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match=f"^{missing}: cannot read: No such file or directory$"):
        load_config([missing])
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"kind: \xff\xfe\n")
    with pytest.raises(ConfigError, match=r"binary\.yaml: not UTF-8 text"):
        load_config([str(binary)])
