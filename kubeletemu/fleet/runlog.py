"""A fleet run's log: the events that explain its figures (a resync flushing a node on an NRT written
before a pod's admission, the rejections that follow), one line each with the simulated time, kept to the
first :data:`LIMIT` lines (the rest counted) so a large run's result stays small."""

from __future__ import annotations

LIMIT = 200


class RunLog:
    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self.lines: list[str] = []
        self.omitted = 0

    def add(self, at: float, text: str) -> None:
        if len(self.lines) < self.limit:
            self.lines.append(f"{at:10.3f}s  {text}")
        else:
            self.omitted += 1

    def result(self) -> list[str]:
        return self.lines + ([f"... {self.omitted} more line(s)"] if self.omitted else [])
