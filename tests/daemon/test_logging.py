"""JSON-lines logging: structlog and stdlib records rendered to parseable lines."""

from __future__ import annotations

import io
import json
import logging
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import structlog

from kubeletemu.daemon.logging import (
    LoggingSetupError,
    configure_logging,
    get_logger,
    parse_level,
    stream_is_journal,
)


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.reset_defaults()


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_structlog_event_is_one_json_line() -> None:
    out = io.StringIO()
    configure_logging("info", stream=out, journal=False)
    get_logger("kubeletemu.admission").info("pod admitted", pod="default/web", cpus=[2, 3])
    [line] = lines(out)
    record = json.loads(line)
    assert record["event"] == "pod admitted"
    assert record["level"] == "info"
    assert record["logger"] == "kubeletemu.admission"
    assert record["pod"] == "default/web"
    assert record["cpus"] == [2, 3]
    assert datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")).tzinfo is not None
    assert list(record)[:4] == ["timestamp", "level", "logger", "event"]


def test_stdlib_logging_goes_through_the_same_renderer() -> None:
    out = io.StringIO()
    configure_logging("info", stream=out, journal=False)
    logging.getLogger("grpc._server").warning("slow handler: %d ms", 250)
    record = json.loads(lines(out)[0])
    assert (record["level"], record["logger"], record["event"]) == (
        "warning",
        "grpc._server",
        "slow handler: 250 ms",
    )
    assert "timestamp" in record


def test_exception_is_rendered_into_the_line() -> None:
    out = io.StringIO()
    configure_logging("info", stream=out, journal=False)
    try:
        raise RuntimeError("checkpoint corrupt")
    except RuntimeError:
        get_logger("x").exception("restore failed")
    [line] = lines(out)
    record = json.loads(line)
    assert record["level"] == "error"
    assert "RuntimeError: checkpoint corrupt" in record["exception"]


def test_level_threshold_applies_to_both_paths() -> None:
    out = io.StringIO()
    configure_logging("warning", stream=out, journal=False)
    get_logger("a").info("hidden")
    logging.getLogger("b").info("hidden too")
    get_logger("a").error("shown")
    assert [json.loads(line)["event"] for line in lines(out)] == ["shown"]


@pytest.mark.parametrize(
    ("level", "prefix"),
    [("debug", "<7>"), ("info", "<6>"), ("warning", "<4>"), ("error", "<3>"), ("critical", "<2>")],
)
def test_journal_priority_prefix(level: str, prefix: str) -> None:
    out = io.StringIO()
    configure_logging("debug", stream=out, journal=True)
    getattr(get_logger("j"), level)("event")
    [line] = lines(out)
    assert line.startswith(prefix)
    assert json.loads(line[len(prefix) :])["level"] == level


def test_reconfiguring_replaces_the_handler() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("info", stream=first, journal=False)
    configure_logging("info", stream=second, journal=False)
    get_logger().info("once")
    assert first.getvalue() == ""
    assert len(lines(second)) == 1


def test_journal_stream_detection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open(tmp_path / "stream", "w") as stream:
        info = os.fstat(stream.fileno())
        monkeypatch.setenv("JOURNAL_STREAM", f"{info.st_dev}:{info.st_ino}")
        assert stream_is_journal(stream)
        configure_logging("info", stream=stream)
        get_logger().info("to the journal")
        stream.flush()
        monkeypatch.setenv("JOURNAL_STREAM", f"{info.st_dev}:{info.st_ino + 1}")
        assert not stream_is_journal(stream)
    assert (tmp_path / "stream").read_text().startswith("<6>{")
    monkeypatch.delenv("JOURNAL_STREAM")
    assert not stream_is_journal(io.StringIO())


def test_parse_level() -> None:
    assert parse_level("DEBUG") == logging.DEBUG
    assert parse_level(" warning ") == logging.WARNING
    assert parse_level(logging.ERROR) == logging.ERROR
    with pytest.raises(LoggingSetupError, match="unknown log level 'verbose': expected one of debug, info"):
        parse_level("verbose")
