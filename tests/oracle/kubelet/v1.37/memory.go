package main

import (
	"slices"
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// memoryCase: memorymanager.NewPolicyStatic on a machine (memory and hugepages per NUMA node) with memory
// reserved per node, Start on an empty in-memory state, then for every container of every pod in order
// GetTopologyHints and Allocate, each container's merged hint given by the case through a fixed Store.
type memoryCase struct {
	Machine []struct {
		ID     int    `json:"id"`
		Memory uint64 `json:"memory"`
		// page size in KiB (decimal string) -> number of pages
		HugePages map[string]uint64 `json:"hugepages"`
	} `json:"machine"`
	// NUMA node (decimal string) -> resource name -> bytes
	Reserved map[string]map[string]uint64 `json:"reserved"`
	TMPolicy string                       `json:"tm_policy"`
	Pods     []podJSON                    `json:"pods"`
}

func runMemory(c memoryCase) answer {
	machine := &cadvisorMachineInfo{}
	for _, n := range c.Machine {
		node := cadvisorNode{Id: n.ID, Memory: n.Memory}
		for size, pages := range n.HugePages {
			pageSize, err := strconv.ParseUint(size, 10, 64)
			if err != nil {
				return answer{"harness_error": err.Error()}
			}
			node.HugePages = append(node.HugePages, cadvisorHugePagesInfo{PageSize: pageSize, NumPages: pages})
		}
		machine.Topology = append(machine.Topology, node)
		machine.MemoryCapacity += n.Memory
	}
	reserved := map[int]map[v1.ResourceName]uint64{}
	for node, resources := range c.Reserved {
		id, err := strconv.Atoi(node)
		if err != nil {
			return answer{"harness_error": err.Error()}
		}
		reserved[id] = map[v1.ResourceName]uint64{}
		for name, size := range resources {
			reserved[id][v1.ResourceName(name)] = size
		}
	}
	store := newFixedStore(c.TMPolicy, c.Pods)
	policy, s, err := newMemoryPolicy(machine, reserved, store)
	if err != nil {
		return answer{"error": err.Error()}
	}
	containers := eachContainer(c.Pods, func(pod *v1.Pod, container *v1.Container) answer {
		hints := memoryHints(policy, s, pod, container)
		err := memoryAllocate(policy, s, pod, container)
		var blocks any
		if got := s.GetMemoryBlocks(string(pod.UID), container.Name); got != nil {
			// Allocate ranges over the requested resources, a map: the blocks come in Go's random map
			// order, sorted here by type (ours are sorted alike).
			got = slices.Clone(got)
			sort.SliceStable(got, func(i, j int) bool { return got[i].Type < got[j].Type })
			encoded := []answer{}
			for _, b := range got {
				encoded = append(encoded, answer{"numa": nonNil(b.NUMAAffinity), "type": string(b.Type), "size": b.Size})
			}
			blocks = encoded
		}
		return answer{"hints": encodeHints(hints), "blocks": blocks, "error": errorString(err)}
	})
	return answer{"containers": containers, "machine_state": s.GetMachineState()}
}
