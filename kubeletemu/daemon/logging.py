"""JSON-lines logging for the daemon: structlog in front, the stdlib ``logging`` tree behind it.

One line per event on standard output, ``{"timestamp": ..., "level": ..., "logger": ..., "event": ...,
<bound keys>}``. Under systemd (``$JOURNAL_STREAM`` names our standard output) each line starts with the
``sd-daemon(3)`` priority prefix (``<6>`` for info) so journald records the priority: ``journalctl -p err``
then works without a journal client library. Records from other libraries' stdlib loggers (grpc, asyncio)
go through the same renderer.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog
from structlog.typing import Processor

from kubeletemu.logger import get_logger as get_logger  # the daemon's modules take it from here

# sd-daemon(3) priorities (syslog levels) for structlog's level names.
_PRIORITY = {"debug": 7, "info": 6, "warning": 4, "error": 3, "critical": 2}
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
_LEAD_KEYS = ("timestamp", "level", "logger", "event")


class LoggingSetupError(ValueError):
    """An unknown log level name."""


class _JSONLinesHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the root handler we own, so reconfiguring replaces it instead of adding a second."""


def parse_level(level: str | int) -> int:
    if isinstance(level, int):
        return level
    try:
        return _LEVELS[level.strip().lower()]
    except KeyError:
        raise LoggingSetupError(
            f"unknown log level {level!r}: expected one of {', '.join(_LEVELS)}"
        ) from None


def stream_is_journal(stream: TextIO) -> bool:
    """``$JOURNAL_STREAM`` is ``<device>:<inode>`` of the journal socket; it is ours only if it is this fd."""
    expected = os.environ.get("JOURNAL_STREAM", "")
    try:
        info = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return expected == f"{info.st_dev}:{info.st_ino}"


def _renderer(priority_prefix: bool) -> Processor:
    def render(_logger: Any, _name: str, event_dict: MutableMapping[str, Any]) -> str:
        ordered = {key: event_dict.pop(key) for key in _LEAD_KEYS if key in event_dict}
        ordered.update(event_dict)
        line = json.dumps(ordered, default=str, ensure_ascii=False)
        if priority_prefix:
            return f"<{_PRIORITY.get(str(ordered.get('level')), 6)}>{line}"
        return line

    return render


def configure_logging(
    level: str | int = "info", *, stream: TextIO | None = None, journal: bool | None = None
) -> None:
    """Route structlog and stdlib ``logging`` to JSON lines on ``stream`` (standard output by default).

    ``journal`` forces the ``<N>`` priority prefix on or off; by default it is on when ``$JOURNAL_STREAM``
    matches the stream. Calling it again replaces the previous configuration.
    """
    threshold = parse_level(level)
    target = stream if stream is not None else sys.stdout
    prefix = stream_is_journal(target) if journal is None else journal
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
    ]
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.stdlib.PositionalArgumentsFormatter(),
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    handler = _JSONLinesHandler(target)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, _renderer(prefix)],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _JSONLinesHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(threshold)
