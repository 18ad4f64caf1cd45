"""The fleet checked against the real thing: a Fleet file's workload run on a real control plane (etcd,
kube-apiserver, kube-controller-manager, a real scheduler) over ``kubeletemu nodes``, measured as the fleet
measures it, beside ``kubeletemu fleet`` on the same file and seeds.

- :mod:`.workload`: the ReplicaSets of one seed, from the fleet's own seeded arrivals;
- :mod:`.measure`: a run on a live API server (create, watch, delete) and its figures;
- :mod:`.cluster`: the cluster a run needs, started from ``tests/upstream``;
- :mod:`.compare`: real beside simulated, with the fleet's statistics.
"""
