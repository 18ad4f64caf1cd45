"""The best hint of Koordinator's ``mergeFilteredHints`` without walking the cross product.

Koordinator (koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``,
``pkg/scheduler/frameworkext/topologymanager/policy.go``) folds every permutation of the providers' hints,
in odometer order, into a best hint. Under Restricted every feasible hint is preferred, so an 8-NUMA node
gives 255 hints per resource and 255^R permutations. :func:`merge.merge_filtered_hints` keeps that literal
fold; this module gives the same hint in far fewer steps. Why it is the same:

1. **Class.** A candidate's class is (preferred after the exclusive check, width). The fold only ever
   moves to a candidate of a better or equal class (preferred beats not preferred, then fewer NUMA nodes
   wins), and the first candidate of the best reachable class C* always replaces a state of a worse class.
   So the answer is the fold over C*'s candidates alone, started from the initial hint (all NUMA nodes, not
   preferred) when that hint is in C*, else taken by C*'s first candidate. C* comes from the set of
   reachable preferred masks and, when there is none, the set of reachable ANDs (a few hundred at most).
2. **Within C*** all widths are equal, and ``narrower`` is the smaller mask value, so the fold's step is
   "take the candidate iff its mask value is smaller, or its score is higher". In a stretch of candidates,
   the first one to beat an incoming state is a *record* (a running minimum of the mask value or running
   maximum of the score), and a record beats every candidate before it, so once one is taken every later
   record is taken too. A stretch therefore either leaves an incoming state alone (when it beats none of
   the stretch's smallest mask value and highest score) or leaves one fixed state: the one its own fold
   ends in. That triple is a :data:`Transfer`; stretches compose exactly (:func:`_concat`).
3. **Contexts.** The stretch below a prefix of choices depends on the prefix only through a small context
   (below), so each distinct context is summed up once per provider level (memoised) and prefixes that
   cannot reach C* are cut off. Scores count only hints whose mask equals the merged one, and that can
   only be hints whose mask equals the prefix's AND, so a context keeps their score sum only while the AND
   is as narrow as C*.

A merged hint's ``unsatisfied`` is a hint's flag, or the widest mask being wider than the merged one; with
C*'s width fixed that is "some mask is wider than C*", one more bit of context.

The answer is a ``(mask, unsatisfied, preferred, score)`` tuple, or None where the initial hint stands.
Calls of the exclusive check (``check_ok``) are pure here: the caller keeps the literal fold for inputs
where that check could panic (its panic names the first permutation that reaches it).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Protocol

from kubeletemu.bitmask import BitMask


class Hint(Protocol):
    """What the fold reads of a ``NUMATopologyHint``."""

    @property
    def affinity(self) -> BitMask | None: ...

    @property
    def unsatisfied(self) -> bool: ...

    @property
    def preferred(self) -> bool: ...

    @property
    def score(self) -> int: ...


# A state of the fold inside C*: (mask value, score, unsatisfied).
State = tuple[int, int, bool]
# A stretch of candidates summed up: (smallest mask value, highest score, the state its fold ends in); None
# for a stretch with no candidate.
Transfer = tuple[int, int, State] | None
# One hint, flattened: (raw mask or None, mask & all NUMA nodes, raw width, unsatisfied, preferred, score).
_Flat = tuple[int | None, int, int, bool, bool, int]


def _apply(transfer: Transfer, state: State | None) -> State | None:
    """The state a stretch leaves from ``state`` (None: before any candidate of C*, beaten by any)."""
    if transfer is None:
        return state
    if state is None or transfer[0] < state[0] or transfer[1] > state[1]:
        return transfer[2]
    return state


def _concat(first: Transfer, second: Transfer) -> Transfer:
    """The transfer of ``first`` followed by ``second``."""
    if first is None:
        return second
    if second is None:
        return first
    ends = _apply(second, first[2])
    assert ends is not None
    return min(first[0], second[0]), max(first[1], second[1]), ends


def _of_states(states: Sequence[State]) -> Transfer:
    """The transfer of single candidates in order: the literal in-class fold over them, from no state."""
    if not states:
        return None
    ends = states[0]
    low, high = ends[0], ends[1]
    for state in states:
        value, score = state[0], state[1]
        if value < ends[0] or score > ends[1]:
            ends = state
        low, high = min(low, value), max(high, score)
    return low, high, ends


class _Fold:
    """One merge: the dims flattened, C* and the memoised transfers."""

    def __init__(self, full: int, dims: Sequence[Sequence[_Flat]], check_ok: Callable[[int], bool]) -> None:
        self.full = full
        self.check_ok = check_ok
        self.dims = dims
        self.memo: dict[tuple[int, int | None, bool, int], Transfer] = {}
        self.aligned: dict[tuple[int, int], list[_Flat]] = {}
        self.preferred = False
        self.width = 0

    def best(self) -> tuple[int, bool, bool, int] | None:
        if not self._choose_class():
            return None
        start: State | None = None
        if not self.preferred and self.width == self.full.bit_count():
            start = (self.full, 0, False)  # the initial hint is in C*
        preferred, full = self.preferred, self.full
        transfer = self._preferred(0, None, False, 0) if preferred else self._any(0, full, False, 0)
        state = _apply(transfer, start)
        if state is None or state is start:
            return None
        return state[0], state[2], self.preferred, state[1]

    def _choose_class(self) -> bool:
        """Sets C* (``preferred``, ``width``); False when no permutation has a non-empty mask."""
        widths = [w.bit_count() for w in self._preferred_outcomes() if w and self.check_ok(w)]
        if widths:
            self.preferred, self.width = True, min(widths)
            return True
        ands = {self.full}
        for flat in self.dims:
            masks = {h[1] for h in flat}
            ands = {a & m for a in ands for m in masks if a & m}
            if not ands:
                return False
        self.preferred, self.width = False, min(a.bit_count() for a in ands)
        return True

    def _preferred_outcomes(self) -> set[int]:
        """Masks of the permutations ``mergePermutation`` marks preferred: all hints preferred, every raw
        mask equal to the first (None while only nil masks were seen)."""
        refs: set[int | None] = {None}
        for flat in self.dims:
            raws = {h[0] for h in flat if h[4] and h[0] is not None}
            nil = any(h[4] and h[0] is None for h in flat)
            kept: set[int | None] = set(refs) if nil else set()
            for ref in refs:
                if ref is None:
                    kept |= raws
                elif ref in raws:
                    kept.add(ref)
            refs = kept
        return {self.full if r is None else r & self.full for r in refs}

    def _preferred(self, level: int, ref: int | None, unsat: bool, score: int) -> Transfer:
        """C* preferred: the permutations below this prefix whose hints are all preferred with the raw mask
        ``ref`` (None: only nil masks so far) or nil. ``score``: the prefix hints' scores where their mask is
        the merged one."""
        if level == len(self.dims):
            mask = self.full if ref is None else ref & self.full
            in_class = mask.bit_count() == self.width and self.check_ok(mask)
            return _of_states([(mask, score, unsat)]) if in_class else None
        key = (level, ref, unsat, score)
        if key in self.memo:
            return self.memo[key]
        out: Transfer = None
        for raw, mask, width, h_unsat, _, h_score in self._aligned(level, ref):
            if raw is None:
                child = (ref, unsat or h_unsat, score)
            elif ref is None:
                if mask.bit_count() != self.width or not self.check_ok(mask):
                    continue
                child = (raw, unsat or h_unsat or width > self.width, h_score if raw == mask else 0)
            else:
                child = (ref, unsat or h_unsat, score + (h_score if raw == mask else 0))
            out = _concat(out, self._preferred(level + 1, *child))
        self.memo[key] = out
        return out

    def _aligned(self, level: int, ref: int | None) -> list[_Flat]:
        """The preferred hints of a level that keep a permutation preferred after ``ref``, in order."""
        if ref is None:
            return [h for h in self.dims[level] if h[4]]
        key = (level, ref)
        hints = self.aligned.get(key)
        if hints is None:
            hints = [h for h in self.dims[level] if h[4] and (h[0] is None or h[0] == ref)]
            self.aligned[key] = hints
        return hints

    def _any(self, level: int, and_mask: int, unsat: bool, score: int) -> Transfer:
        """C* not preferred (no permutation is preferred then): the permutations below this prefix whose
        AND is exactly C*'s width. ``and_mask``: the prefix's AND; ``score``: the prefix hints' scores whose
        mask is ``and_mask`` (kept only once ``and_mask`` is as narrow as C*, where it can be the merged
        mask)."""
        if level == len(self.dims):  # no dims at all: the one empty permutation
            return _of_states([(and_mask, score, unsat)]) if and_mask.bit_count() == self.width else None
        key = (level, and_mask, unsat, score)
        if key in self.memo:
            return self.memo[key]
        target = self.width
        last = level == len(self.dims) - 1
        out: Transfer = None
        states: list[State] = []
        hints = self.dims[level]
        if last:  # only an AND of exactly C*'s width counts: sift with a comprehension, cheaper per hint
            hints = [h for h in hints if (and_mask & h[1]).bit_count() == target]
        for raw, mask, width, h_unsat, _, h_score in hints:
            merged = and_mask & mask
            count = merged.bit_count()
            if count < target or (last and count != target):
                continue
            child_unsat = unsat or h_unsat or width > target
            child_score = 0
            if count == target:
                child_score = (score if merged == and_mask else 0) + (h_score if raw == merged else 0)
            if last:
                states.append((merged, child_score, child_unsat))
            else:
                out = _concat(out, self._any(level + 1, merged, child_unsat, child_score))
        if last:
            out = _of_states(states)
        self.memo[key] = out
        return out


def flatten(full: int, dims: Sequence[Sequence[Hint]]) -> tuple[tuple[_Flat, ...], ...]:
    """The dims as plain tuples: what the fold reads of each hint (hashable, for the memo)."""
    out: list[tuple[_Flat, ...]] = []
    for hints in dims:
        flat: list[_Flat] = []
        for h in hints:
            raw = None if h.affinity is None else h.affinity.value
            mask = full if raw is None else raw & full
            width = 0 if raw is None else raw.bit_count()
            flat.append((raw, mask, width, h.unsatisfied, h.preferred, h.score))
        out.append(tuple(flat))
    return tuple(out)


Best = tuple[int, bool, bool, int]
# Answers by input, for nodes in the same state (a fleet's fresh nodes): bounded, as an 8-NUMA input holds
# some hundreds of hints.
_MEMO_SIZE = 256
_memo: OrderedDict[tuple[int, Hashable, tuple[tuple[_Flat, ...], ...]], Best | None] = OrderedDict()
_memo_lock = threading.Lock()  # the daemon schedules on several threads


def clear_memo() -> None:
    """Forgets the memoised answers (benchmarks and tests time or check the fold itself)."""
    with _memo_lock:
        _memo.clear()


def best_merged_hint(
    full: int,
    dims: Sequence[Sequence[Hint]],
    check_ok: Callable[[int], bool],
    check_key: Hashable | None = None,
) -> Best | None:
    """The literal fold's best hint as ``(mask, unsatisfied, preferred, score)``; None where no permutation
    replaces the initial hint (all of ``full``, not preferred, score 0). ``check_ok(mask)`` is
    ``checkExclusivePolicy`` on a merged mask and must not raise; ``check_key``, when given, names its
    behaviour (the same key, the same answers), and answers are then memoised by input."""
    flat = flatten(full, dims)
    if check_key is None:
        return _Fold(full, flat, check_ok).best()
    key = (full, check_key, flat)
    with _memo_lock:
        if key in _memo:
            _memo.move_to_end(key)
            return _memo[key]
    best = _Fold(full, flat, check_ok).best()
    with _memo_lock:
        _memo[key] = best
        if len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)
    return best
