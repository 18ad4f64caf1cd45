"""Each node's Filter answer for a pod shape, kept across scheduling cycles while the node stays as it was.

A node's answer in ``RunFilterPlugins`` is a function of the pod's shape, the node's ``NodeInfo`` object and
the versions the versioned plugins' sources give the node (:class:`~.schedule_one.VersionedAnswers`), when
every Filter plugin of the profile is kept so (pure or versioned); so is the side effect of its rejection
(the NRT cache's ``NodeMaybeOverReserved`` on that node). :class:`ShapeAnswers` holds, per node, the last
answer a cycle of the shape computed, with the object and versions it was computed for; it holds as long as
both are unchanged, whatever else changed in between. A cycle then checks afresh only the nodes whose answer
does not hold, and takes the others a run at a time (:class:`KeptRun`): the same statuses in the same order
into the Diagnosis, the same feasible nodes up to ``numFeasibleNodesToFind``, and the side effects in the
order the nodes are checked, the kept ones given before each node checked afresh gives its own.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Protocol, TypeVar

from kubeletemu.fleet.cycle.diagnosis import PENDING, Diagnosis, NodeStatus
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import NodeInfo

_T = TypeVar("_T")
_PLUGIN = operator.attrgetter("plugin")


class NodeEffects(Protocol):
    """The one Filter model whose rejections have a side effect naming the node rejected."""

    def effects_again(self, pod: Pod, node_names: Sequence[str]) -> None: ...


def rotate(items: Sequence[_T], start: int) -> list[_T]:
    """``items`` in the order a cycle starting at ``start`` checks them."""
    return list(items[start:]) + list(items[:start])


class ShapeAnswers:
    """Per node (in the scheduler's node order): the last answer computed for the shape, the NodeInfo
    object and versions it holds for (None: none held), and whether the rejection had the side effect."""

    def __init__(self, count: int) -> None:
        self.infos: list[NodeInfo | None] = [None] * count
        self.names: list[str] = [""] * count  # the infos' names (a node keeps its name and index)
        self.versions: list[Hashable | None] = [None] * count
        self.statuses: list[NodeStatus | None] = [None] * count
        self.marked: list[bool] = [False] * count

    def __len__(self) -> int:
        return len(self.infos)

    def forget(self, index: int) -> None:
        self.infos[index] = self.statuses[index] = None


class KeptRun:
    """One cycle's walk over the nodes with a shape's kept answers (see the module docstring).

    ``rotated``: the nodes in the order checked; ``versions_of``: the versioned plugins' versions of each
    node (one plugin's own version, a tuple for several; None where one keeps nothing), or None for a
    profile without versioned plugins."""

    def __init__(
        self,
        answers: ShapeAnswers,
        pod: Pod,
        rotated: list[NodeInfo],
        start: int,
        passed: NodeStatus,
        versions_of: Callable[[Sequence[NodeInfo]], list[Hashable | None]] | None,
    ) -> None:
        self.answers = answers
        self.pod = pod
        self.rotated = rotated
        self.start = start
        self.passed = passed
        # Names of the kept positions from the kept answers; a position checked afresh gets its own.
        self.names = rotate(answers.names, start)
        self.statuses = rotate(answers.statuses, start)
        self.marked = rotate(answers.marked, start)
        self.versions = versions_of(rotated) if versions_of is not None else None
        # Positions checked afresh, with what the check gave (status, crashed).
        self.fresh: dict[int, tuple[NodeStatus, int]] = {}
        self.end = 0  # the positions before this one were checked or answered
        self.answered = 0  # nodes answered from the kept answers

    def positions_to_check(self) -> list[int]:
        """The positions whose kept answer does not hold: another NodeInfo object, other versions, none."""
        same: Iterable[bool] = map(operator.is_, self.rotated, rotate(self.answers.infos, self.start))
        if self.versions is not None:
            kept = rotate(self.answers.versions, self.start)
            same = [
                unchanged and version is not None and version == kept_version
                for unchanged, version, kept_version in zip(same, self.versions, kept, strict=True)
            ]
        return list(itertools.compress(range(len(self.rotated)), map(operator.not_, same)))

    def answer(
        self,
        first: int,
        end: int,
        diagnosis: Diagnosis,
        feasible: list[NodeInfo],
        to_find: int,
        effects: NodeEffects | None,
    ) -> bool:
        """Positions ``first`` to ``end`` (excluded) answered from the kept answers, as the cycle's loop
        would: feasible nodes appended, rejections into ``diagnosis``, side effects given. True when a
        feasible node past ``to_find`` ends the loop there (checked, dropped, uncounted)."""
        if first >= end:
            return False
        passed = self.passed
        flags = [status is passed for status in self.statuses[first:end]]
        room = to_find - len(feasible)
        passing = list(itertools.compress(range(first, end), flags))
        stopped = len(passing) > room
        if stopped:
            end = passing[room]
            del flags[end - first :]
            passing = passing[:room]
        self.end = end + 1 if stopped else end
        self.answered += self.end - first
        feasible.extend(self.rotated[p] for p in passing)
        rejected = list(map(operator.not_, flags))
        names = list(itertools.compress(self.names[first:end], rejected))
        statuses = list(itertools.compress(self.statuses[first:end], rejected))
        if not statuses:
            return stopped
        diagnosis.node_to_status.update(zip(names, statuses, strict=True))  # type: ignore[arg-type]
        plugins = diagnosis.unschedulable_plugins
        plugins.update(map(_PLUGIN, statuses))  # every kept status that did not pass is a rejection
        plugins.discard("")  # a status without a plugin names none (Diagnosis.add)
        for status in statuses:
            if status is not None and status.code == PENDING and status.plugin:
                diagnosis.pending_plugins.add(status.plugin)
        if effects is not None:
            marks = list(itertools.compress(names, itertools.compress(self.marked[first:end], rejected)))
            if marks:
                effects.effects_again(self.pod, marks)
        return stopped

    def checked(self, position: int, status: NodeStatus, crashed: int) -> None:
        """Node ``position`` was checked afresh (its side effects, if any, already given)."""
        self.fresh[position] = (status, crashed)
        self.names[position] = self.rotated[position].name
        self.end = position + 1

    def keep(self, recorded: tuple[str, ...] | None) -> bool:
        """The fresh answers kept for the next cycle of the shape; ``recorded``: the side effects the cycle
        gave, in order (None: the profile has none). False, keeping nothing, when those are not one per
        rejected node in the order checked, which the kept answers assume."""
        marked_names: set[str] = set()
        if recorded:
            marked_names = set(recorded)
            in_order = tuple(name for name in self.names[: self.end] if name in marked_names)
            if len(marked_names) != len(recorded) or recorded != in_order:
                return False
        answers, count, start = self.answers, len(self.rotated), self.start
        for position, (status, crashed) in self.fresh.items():
            index = (start + position) % count
            version = self.versions[position] if self.versions is not None else ()
            if crashed or (status is not self.passed and not status.rejected) or version is None:
                answers.forget(index)  # a panic, an error: checked again each time
                continue
            answers.infos[index] = self.rotated[position]
            answers.names[index] = self.names[position]
            answers.versions[index] = version
            answers.statuses[index] = status
            answers.marked[index] = self.names[position] in marked_names
        return True
