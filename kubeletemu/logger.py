"""The structured logger every layer logs through (structlog). Where its lines go, and in what form, is the
daemon's to configure (:mod:`kubeletemu.daemon.logging`); a layer below the daemon (the shadow runner)
takes its logger from here, not from the daemon."""

from __future__ import annotations

import structlog


def get_logger(name: str | None = None) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.get_logger(name)
    return logger
