// Builds etcd (its server module's main package) for the test control plane; see tests/upstream/build.py.
module kubeletemu.test/upstream/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 v3.6.16

tool go.etcd.io/etcd/server/v3
