package main

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager/topology"
)

// cpuCase: cpumanager.NewStaticPolicy on a CPU topology, Start on an empty in-memory state, then for every
// container of every pod in order (init containers first) GetTopologyHints and Allocate, each container's
// merged hint given by the case through a fixed Topology Manager Store (as the upstream unit tests do).
type cpuCase struct {
	Topology struct {
		NumCPUs        int `json:"num_cpus"`
		NumCores       int `json:"num_cores"`
		NumSockets     int `json:"num_sockets"`
		NumNUMANodes   int `json:"num_numa_nodes"`
		NumUncoreCache int `json:"num_uncore_cache"`
		// [cpu, core, socket, numa, uncore]
		CPUs [][5]int `json:"cpus"`
	} `json:"topology"`
	NumReserved int               `json:"num_reserved"`
	Reserved    string            `json:"reserved"`
	Options     map[string]string `json:"options"`
	TMPolicy    string            `json:"tm_policy"`
	Pods        []podJSON         `json:"pods"`
}

func runCPU(c cpuCase) answer {
	details := topology.CPUDetails{}
	for _, row := range c.Topology.CPUs {
		details[row[0]] = topology.CPUInfo{CoreID: row[1], SocketID: row[2], NUMANodeID: row[3], UncoreCacheID: row[4]}
	}
	topo := &topology.CPUTopology{
		NumCPUs:        c.Topology.NumCPUs,
		NumCores:       c.Topology.NumCores,
		NumSockets:     c.Topology.NumSockets,
		NumNUMANodes:   c.Topology.NumNUMANodes,
		NumUncoreCache: c.Topology.NumUncoreCache,
		CPUDetails:     details,
	}
	reserved, err := cpuset.Parse(c.Reserved)
	if err != nil {
		return answer{"harness_error": err.Error()}
	}
	store := newFixedStore(c.TMPolicy, c.Pods)
	policy, s, err := newCPUPolicy(topo, c.NumReserved, reserved, store, c.Options)
	if err != nil {
		return answer{"error": err.Error()}
	}
	containers := eachContainer(c.Pods, func(pod *v1.Pod, container *v1.Container) answer {
		hints := cpuHints(policy, s, pod, container)
		err := cpuAllocate(policy, s, pod, container)
		var cpus any
		if set, ok := s.GetCPUSet(string(pod.UID), container.Name); ok {
			cpus = set.String()
		}
		return answer{"hints": encodeHints(hints), "cpus": cpus, "error": errorString(err)}
	})
	return answer{"containers": containers, "default": s.GetDefaultCPUSet().String()}
}
