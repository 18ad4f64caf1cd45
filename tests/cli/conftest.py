"""The daemon fixtures of ``tests/daemon``: the real daemon on the bundled sample topology (2 NUMA nodes,
16 CPUs), on a temporary unix socket."""

from tests.daemon.conftest import make_daemon, sample_tree

__all__ = ["make_daemon", "sample_tree"]
