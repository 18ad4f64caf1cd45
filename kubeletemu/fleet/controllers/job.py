"""The Job controller as far as a fleet run needs it (kubernetes v1.36.3, ``pkg/controller/job/
job_controller.go`` and ``backoff_utils.go``): each arrival of a ``controller: Job`` template is a Job of
one pod (completions 1, parallelism 1), its first pod created with it.

* its pod informer sees a pod change ``informerDelay`` after the API server has it; an update enqueues the
  Job batched (``enqueueSyncJobBatched``: ``SyncJobBatchPeriod``, 1 s); the work queue holds a key once,
  at its earliest due time;
* a sync with a pod missing (``manageJob``) first fails the Job when its failed pods exceed
  ``backoffLimit`` (``BackoffLimitExceeded``: the slot closes, never Running); otherwise it waits out the
  pod-failure backoff (``getRemainingTimeForFailuresCount``): ``DefaultJobPodFailureBackOff`` (10 s)
  doubled for each failure after the first, capped at ``MaxJobPodFailureBackOff`` (10 min), counted from
  the last failure (``enqueueSyncJobWithDelay``, at least the batch period);
* the last failure's time is ``getFinishedTime``: a pod the kubelet rejected at admission has no container
  status, Ready condition or deletion timestamp, so it is its creation timestamp (to the second);
* the create it sends reaches the API server ``syncDelay`` after the sync.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kubeletemu.fleet.clock import Clock
from kubeletemu.fleet.controllers.replicaset import Slot
from kubeletemu.fleet.kubelet import FAILED
from kubeletemu.fleet.spec import ReplicaSetSpec

SYNC_JOB_BATCH_PERIOD_S = 1.0
DEFAULT_JOB_POD_FAILURE_BACKOFF_S = 10.0
MAX_JOB_POD_FAILURE_BACKOFF_S = 600.0


def pod_failure_backoff(failures: int) -> float:
    """``getRemainingTimeForFailuresCount``'s backoff before it subtracts the time since the failure."""
    if failures == 0:
        return 0.0
    backoff = DEFAULT_JOB_POD_FAILURE_BACKOFF_S
    for _ in range(1, failures):
        backoff *= 2
        if backoff >= MAX_JOB_POD_FAILURE_BACKOFF_S:
            return MAX_JOB_POD_FAILURE_BACKOFF_S
    return backoff


@dataclass
class _Job:
    slot: Slot
    failed: set[str] = field(default_factory=set)  # its pods seen Failed
    last_failure: float = 0.0
    due: float | None = None  # when its key leaves the work queue
    creating: bool = False  # a create sent, not yet observed


@dataclass
class JobController:
    name: str
    clock: Clock
    spec: ReplicaSetSpec  # the informer's and a sync's delays, as the ReplicaSet controller's
    backoff_limit: int
    create: Callable[[Slot], None]
    # The Job failed (BackoffLimitExceeded): its slot will never run.
    give_up: Callable[[Slot], None]
    jobs: dict[int, _Job] = field(default_factory=dict)
    created: int = 0

    def observe(self, key: str, slot: Slot, phase: str | None, *, ours: bool = False) -> None:
        """The informer delivers a pod event (``phase`` None: deleted)."""
        job = self.jobs.setdefault(slot.id, _Job(slot))
        if ours:
            job.creating = False
        if phase != FAILED or key in job.failed or slot.done:
            return
        job.failed.add(key)
        if slot.failed_created is not None:
            job.last_failure = max(job.last_failure, float(slot.failed_created))
        self._enqueue(job, SYNC_JOB_BATCH_PERIOD_S)

    def _enqueue(self, job: _Job, delay: float) -> None:
        due = self.clock.now() + delay
        if job.due is not None and job.due <= due:
            return
        job.due = due
        self.clock.after(delay, lambda: self._sync(job, due))

    def _sync(self, job: _Job, due: float) -> None:
        if job.due != due:
            return  # superseded by an earlier enqueue
        job.due = None
        slot = job.slot
        if slot.done or slot.running_at is not None or job.creating:
            return
        failures = len(job.failed)
        if failures > self.backoff_limit:
            self.give_up(slot)
            return
        remaining = pod_failure_backoff(failures) - (self.clock.now() - job.last_failure)
        if remaining > 0:
            self._enqueue(job, max(remaining, SYNC_JOB_BATCH_PERIOD_S))
            return
        job.creating = True
        self.clock.after(self.spec.sync_delay_s, lambda: self._created(job))

    def _created(self, job: _Job) -> None:
        self.created += 1
        self.create(job.slot)
