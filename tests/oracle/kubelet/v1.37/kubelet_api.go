package main

// Every call whose signature moves between Kubernetes releases, for k8s.io/kubernetes v1.37.2: the
// rest of the harness is the same at every release (python -m tests.oracle.gomod copies it), and this
// file is what a release's harness adapts. At v1.37.2 the hint providers and policies take a logger
// and the lifecycle operation ("add" here), Admit and the memory policy's Allocate a context; cadvisor's
// machine model moved to its lib module.

import (
	"context"

	cadvisorapi "github.com/google/cadvisor/lib/model"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	cpustate "k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/state"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/topology"
	"k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	memorystate "k8s.io/kubernetes/pkg/kubelet/cm/memorymanager/state"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
)

var ctx = klog.NewContext(context.Background(), logger)

// cadvisor's machine model: github.com/google/cadvisor/lib/model at v1.37.2 (info/v1 before).
type (
	cadvisorNode          = cadvisorapi.Node
	cadvisorMachineInfo   = cadvisorapi.MachineInfo
	cadvisorHugePagesInfo = cadvisorapi.HugePagesInfo
)

// --- Topology Manager ---

func newTopologyManager(topology []cadvisorapi.Node, policy, scope string, options map[string]string) (topologymanager.Manager, error) {
	return topologymanager.NewManager(logger, topology, policy, scope, options)
}

func addHintProvider(m topologymanager.Manager, p *scriptedProvider) { m.AddHintProvider(logger, p) }

func admit(m topologymanager.Manager, pod *v1.Pod) lifecycle.PodAdmitResult {
	return m.Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: pod, Operation: lifecycle.AddOperation})
}

func getAffinity(m topologymanager.Manager, podUID, containerName string) topologymanager.TopologyHint {
	return m.GetAffinity(logger, podUID, containerName)
}

func (p *scriptedProvider) GetTopologyHints(_ klog.Logger, _ *v1.Pod, c *v1.Container, _ lifecycle.Operation) map[string][]topologymanager.TopologyHint {
	return p.containerHints(c)
}

func (p *scriptedProvider) GetPodTopologyHints(_ klog.Logger, _ *v1.Pod, _ lifecycle.Operation) map[string][]topologymanager.TopologyHint {
	return p.podHints()
}

func (p *scriptedProvider) AllocatePod(_ klog.Logger, _ *v1.Pod, _ lifecycle.Operation) error {
	return nil
}

func (p *scriptedProvider) Allocate(_ context.Context, _ *v1.Pod, c *v1.Container, _ lifecycle.Operation) error {
	return p.allocate(c)
}

func (s *fixedStore) GetAffinity(_ klog.Logger, podUID string, containerName string) topologymanager.TopologyHint {
	return s.affinity(podUID, containerName)
}

// --- CPU Manager ---

func newCPUPolicy(topo *topology.CPUTopology, numReserved int, reserved cpuset.CPUSet, store *fixedStore, options map[string]string) (cpumanager.Policy, cpustate.State, error) {
	policy, err := cpumanager.NewStaticPolicy(logger, topo, numReserved, reserved, store, options)
	return started(policy, cpustate.NewMemoryState(logger), err)
}

func cpuHints(p cpumanager.Policy, s cpustate.State, pod *v1.Pod, c *v1.Container) map[string][]topologymanager.TopologyHint {
	return p.GetTopologyHints(logger, s, pod, c, lifecycle.AddOperation)
}

func cpuAllocate(p cpumanager.Policy, s cpustate.State, pod *v1.Pod, c *v1.Container) error {
	return p.Allocate(logger, s, pod, c, lifecycle.AddOperation)
}

// --- Memory Manager ---

func newMemoryPolicy(machine *cadvisorapi.MachineInfo, reserved map[int]map[v1.ResourceName]uint64, store *fixedStore) (memorymanager.Policy, memorystate.State, error) {
	policy, err := memorymanager.NewPolicyStatic(logger, machine, reserved, store)
	return started(policy, memorystate.NewMemoryState(logger), err)
}

func memoryHints(p memorymanager.Policy, s memorystate.State, pod *v1.Pod, c *v1.Container) map[string][]topologymanager.TopologyHint {
	return p.GetTopologyHints(logger, s, pod, c, lifecycle.AddOperation)
}

func memoryAllocate(p memorymanager.Policy, s memorystate.State, pod *v1.Pod, c *v1.Container) error {
	return p.Allocate(ctx, s, pod, c, lifecycle.AddOperation)
}
