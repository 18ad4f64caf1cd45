"""``kubeletemu extender`` as a process: it serves mutual TLS until SIGTERM and exits 0; a configuration it
cannot use exits 2 with one line naming the file and the field; the docs' example configuration reads as
the defaults it documents."""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeletemu.extender.config import parse_config
from tests.daemon.daemon_process import ignores_sigpipe
from tests.extender.conftest import Certs, config_text

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubeletemu", "extender", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (None, r"kubeletemu: .*missing\.yaml: cannot read: No such file or directory"),
        (
            "kind: Extender\n",
            r"kubeletemu: .*extender\.yaml: apiVersion: expected kubeletemu\.io/v1alpha1, got None",
        ),
        (
            "apiVersion: kubeletemu.io/v1alpha1\nkind: Extender\n",
            r"kubeletemu: .*extender\.yaml: tls: Required value: the extender serves mutual TLS only",
        ),
        (
            "apiVersion: kubeletemu.io/v1alpha1\nkind: Extender\nstaleAfter: soon\ntls: {}\n",
            r"kubeletemu: .*extender\.yaml: tls\.certFile: expected a string, got null",
        ),
        (
            "apiVersion: kubeletemu.io/v1alpha1\nkind: Extender\nledger: {closeOn: never}\n"
            "tls: {certFile: a, keyFile: b, clientCAFile: c}\n",
            r"kubeletemu: .*extender\.yaml: ledger\.closeOn: expected one of agent-report, ttl, got 'never'",
        ),
        (
            "apiVersion: kubeletemu.io/v1alpha1\nkind: Extender\nhealthListen: nowhere\n"
            "tls: {certFile: a, keyFile: b, clientCAFile: c}\n",
            r"kubeletemu: .*extender\.yaml: healthListen: expected host:port, got 'nowhere'",
        ),
        (
            "apiVersion: kubeletemu.io/v1alpha1\nkind: Extender\nlisten: 127.0.0.1:0\n"
            "tls: {certFile: a.crt, keyFile: b.key, clientCAFile: c.crt}\n",
            r"kubeletemu: .*extender\.yaml: tls\.certFile: .*a\.crt: no such file",
        ),
    ],
)
def test_a_configuration_it_cannot_use_exits_2_with_one_line(
    tmp_path: Path, text: str | None, line: str
) -> None:
    path = tmp_path / ("missing.yaml" if text is None else "extender.yaml")
    if text is not None:
        path.write_text(text)
    result = run_cli("--config", str(path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert re.fullmatch(line + "\n", result.stderr), result.stderr


@contextlib.contextmanager
def serving(config: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``kubeletemu extender --announce`` on ``config``: the process and its announcement line; killed
    afterwards if the test left it running."""
    process = subprocess.Popen(
        [sys.executable, "-m", "kubeletemu", "extender", "--config", str(config), "--announce"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stderr is not None
        yield process, process.stderr.readline()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_serves_mutual_tls_until_sigterm(tmp_path: Path, certs: Certs) -> None:
    path = tmp_path / "extender.yaml"
    path.write_text(config_text(certs, "readiness: {when: always}\n"))
    with serving(path) as (process, announced):
        match = re.match(
            r"kubeletemu extender serving https://127\.0\.0\.1:(\d+)/kubeletemu \(mutual TLS\)", announced
        )
        assert match, announced
        connection = http.client.HTTPSConnection(
            "127.0.0.1", int(match.group(1)), context=certs.client_context(), timeout=10
        )
        connection.request("GET", "/readyz")
        response = connection.getresponse()
        assert (response.status, response.read()) == (200, b"ok\n")
        connection.close()
        # A scheduler that closes its connection mid-write is an EPIPE, not the extender's end (CI once
        # saw it killed by SIGPIPE at teardown when the CLI restored SIGPIPE's default for every command).
        assert ignores_sigpipe(process.pid)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def test_health_and_metrics_without_a_client_certificate_on_health_listen(
    tmp_path: Path, certs: Certs
) -> None:
    path = tmp_path / "extender.yaml"
    path.write_text(config_text(certs, "healthListen: 127.0.0.1:0\nreadiness: {expectedNodes: [w-0]}\n"))
    with serving(path) as (process, announced):
        match = re.match(
            r"kubeletemu extender serving https://127\.0\.0\.1:(\d+)/kubeletemu \(mutual TLS\), "
            r"health on http://127\.0\.0\.1:(\d+)\.",
            announced,
        )
        assert match, announced
        tls_port, health_port = int(match.group(1)), int(match.group(2))
        plain = http.client.HTTPConnection("127.0.0.1", health_port, timeout=10)
        answers = {}
        for path_ in ("/healthz", "/readyz", "/metrics"):
            plain.request("GET", path_)
            response = plain.getresponse()
            answers[path_] = (response.status, response.read().decode())
        assert answers["/healthz"] == (200, "ok\n")
        assert answers["/readyz"] == (503, "not ready: node 'w-0' fails closed: its agent never reported\n")
        assert answers["/metrics"][0] == 200
        assert 'kubeletemu_extender_nodes{state="never-reported"} 1.0' in answers["/metrics"][1]
        # No verb on the plain listener; the TLS listener still refuses a client without a certificate.
        plain.request("POST", "/kubeletemu/filter", body=b"{}")
        response = plain.getresponse()
        assert response.status == 404, response.read()
        response.read()
        plain.close()
        bare = http.client.HTTPSConnection("127.0.0.1", tls_port, context=certs.client_context(cert=False))
        with pytest.raises((ssl.SSLError, ConnectionError)):
            bare.request("GET", "/healthz")
            bare.getresponse()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def test_the_docs_example_configuration_reads_as_documented() -> None:
    page = (REPO / "docs" / "extender.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)\n```", page, re.DOTALL)
    [text] = [b for b in blocks if "kind: Extender" in b]
    config = parse_config(text)
    assert (config.host, config.port, config.path_prefix) == ("0.0.0.0", 8443, "/kubeletemu")
    assert config.path("filter") == "/kubeletemu/filter"
    assert (config.stale_after, config.ledger_ttl, config.close_on) == (30.0, 60.0, "agent-report")
    assert not config.bind.enabled
    assert config.expected_nodes == ("worker-000", "worker-001")
    assert config.opt_in_resources == ("kubeletemu.io/exact-numa",)
    assert config.max_body_bytes == 3 * 1024 * 1024
    [feed] = config.feeds
    assert feed.agents == ("10.0.0.5:7443", "10.0.0.6:7443")
    assert (feed.ca_file, feed.cert_file) == (
        "/etc/kubeletemu/extender/agents-ca.crt",
        "/etc/kubeletemu/extender/feed.crt",
    )
