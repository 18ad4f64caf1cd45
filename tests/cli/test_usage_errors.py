"""Issue 27 items 6 and 9: usage errors through the real CLI. An unknown flag is named before any missing
one; a value outside a flag's choices is refused by the CLI itself; each is one line on standard error
and exit status 2, before any daemon is asked (none runs here: a call would be exit 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.support import kubeletemu, pod


def one_usage_line(out_stderr: str) -> str:
    lines = out_stderr.splitlines()
    assert len(lines) == 1, out_stderr
    assert lines[0].startswith("kubeletemu: "), out_stderr
    return lines[0]


def test_a_misspelled_flag_is_named_not_the_missing_one(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text(pod("web"))
    out = kubeletemu("would-admit", "--fille", "pod.yaml", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    line = one_usage_line(out.stderr)
    assert line == (
        "kubeletemu: unrecognized arguments: --fille pod.yaml (see kubeletemu would-admit --help)"
    )
    assert "required" not in line


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # Nothing unknown: what is missing is named, as argparse names it.
        (
            ("would-admit",),
            "kubeletemu: the following arguments are required: -f/--filename/--file "
            "(see kubeletemu would-admit --help)",
        ),
        (
            ("remove",),
            "kubeletemu: one of the arguments --uid -f/--filename/--file is required "
            "(see kubeletemu remove --help)",
        ),
        ((), "kubeletemu: the following arguments are required: COMMAND (see kubeletemu --help)"),
        # Unknown and missing at once: the unknown one first.
        (("admit", "--bogus"), "kubeletemu: unrecognized arguments: --bogus (see kubeletemu admit --help)"),
        (("--bogus", "list"), "kubeletemu: unrecognized arguments: --bogus (see kubeletemu --help)"),
        (
            ("lsit",),
            "kubeletemu: COMMAND: invalid choice: 'lsit': did you mean 'list'? "
            "(choose from 'serve', 'admit', ",
        ),
        (("would-admt",), "kubeletemu: COMMAND: invalid choice: 'would-admt': did you mean 'would-admit'? "),
        (("xyzzy",), "kubeletemu: COMMAND: invalid choice: 'xyzzy' (choose from 'serve', 'admit', "),
        # A flag's value outside its choices: the CLI refuses it, naming the flag.
        (
            ("would-admit", "-f", "pod.yaml", "--policy", "best_effort"),
            "kubeletemu: --policy: invalid choice: 'best_effort': did you mean 'best-effort'? "
            "(choose from 'none', 'best-effort', "
            "'restricted', 'single-numa-node')",
        ),
        (
            ("would-admit", "-f", "pod.yaml", "--scope", "node"),
            "kubeletemu: --scope: invalid choice: 'node' (choose from 'container', 'pod')",
        ),
        (
            ("least-numa-nodes", "-f", "pod.yaml", "--scope", "node"),
            "kubeletemu: --scope: invalid choice: 'node' (choose from 'container', 'pod')",
        ),
        (
            ("would-admit", "-f", "pod.yaml", "--kubelet-version", "1.29"),
            (
                'kubeletemu: --kubelet-version: kubeletVersion "1.29": supported: '
                "1.33, 1.34, 1.35, 1.36, 1.37, master"
            ),
        ),
        (
            ("serve", "--log-level", "verbose"),
            "kubeletemu: --log-level: invalid choice: 'verbose' (choose from 'debug', 'info', 'warning', "
            "'error')",
        ),
        (
            ("nrt", "--update", "sometimes"),
            "kubeletemu: --update: invalid choice: 'sometimes' (choose from 'periodic', 'reactive')",
        ),
        (
            ("schedule", "-f", "pod.yaml", "--flavour", "nrt-exporter"),
            "kubeletemu: --flavour: invalid choice: 'nrt-exporter' (choose from 'rte', 'koordlet', 'nfd')",
        ),
        (
            ("fleet", "-f", "fleet.yaml", "--workers", "many"),
            "kubeletemu: --workers: invalid int value: 'many'",
        ),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], expected: str) -> None:
    (tmp_path / "pod.yaml").write_text(pod("web"))
    out = kubeletemu(*args, cwd=tmp_path, env={"KUBELETEMU_SOCKET": str(tmp_path / "nobody.sock")})
    assert out.returncode == 2 and out.stdout == "", out.stderr
    assert one_usage_line(out.stderr).startswith(expected)


def test_a_good_kubelet_version_passes_the_parser(tmp_path: Path) -> None:
    """``v1.34.2`` is a version the daemon reads as 1.34: the CLI's check accepts it (and the call then
    fails only because no daemon is there)."""
    (tmp_path / "pod.yaml").write_text(pod("web"))
    out = kubeletemu(
        "would-admit",
        "-f",
        "pod.yaml",
        "--kubelet-version",
        "v1.34.2",
        "--socket",
        "nobody.sock",
        cwd=tmp_path,
    )
    assert out.returncode == 3, out.stderr
    assert one_usage_line(out.stderr).startswith("kubeletemu: cannot reach the daemon at nobody.sock")
