"""Go harnesses that answer with kube-scheduler's own packages (the scheduling queue), built per release by
:mod:`tests.oracle.scheduler.build`."""
