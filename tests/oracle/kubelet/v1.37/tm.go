package main

import (
	v1 "k8s.io/api/core/v1"

	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
)

// tmCase: topologymanager.NewManager over cadvisor NUMA nodes, scripted hint providers, one pod's Admit,
// then GetAffinity of each of its containers.
type tmCase struct {
	NUMA []struct {
		ID        int      `json:"id"`
		Distances []uint64 `json:"distances"`
	} `json:"numa"`
	Policy    string            `json:"policy"`
	Scope     string            `json:"scope"`
	Options   map[string]string `json:"options"`
	Pod       podJSON           `json:"pod"`
	Providers []struct {
		// Container name -> that container's hints (a missing name: a nil map).
		Containers map[string]*hintsJSON `json:"containers"`
		Pod        *hintsJSON            `json:"pod"`
		// Allocate of this container fails with AllocateError.
		FailAllocate  string `json:"fail_allocate"`
		AllocateError string `json:"allocate_error"`
	} `json:"providers"`
}

type scriptedProvider struct {
	containers    map[string]*hintsJSON
	pod           *hintsJSON
	failAllocate  string
	allocateError string
}

func (p *scriptedProvider) containerHints(c *v1.Container) map[string][]topologymanager.TopologyHint {
	return decodeHints(p.containers[c.Name])
}

func (p *scriptedProvider) podHints() map[string][]topologymanager.TopologyHint {
	return decodeHints(p.pod)
}

func (p *scriptedProvider) allocate(c *v1.Container) error {
	if p.failAllocate != "" && c.Name == p.failAllocate {
		return allocateError(p.allocateError)
	}
	return nil
}

type allocateError string

func (e allocateError) Error() string { return string(e) }

func runTM(c tmCase) answer {
	var topology []cadvisorNode
	for _, n := range c.NUMA {
		topology = append(topology, cadvisorNode{Id: n.ID, Distances: n.Distances})
	}
	manager, err := newTopologyManager(topology, c.Policy, c.Scope, c.Options)
	if err != nil {
		return answer{"error": err.Error()}
	}
	for _, p := range c.Providers {
		addHintProvider(manager, &scriptedProvider{p.Containers, p.Pod, p.FailAllocate, p.AllocateError})
	}
	pod := c.Pod.build()
	result := admit(manager, pod)
	affinity := answer{}
	for _, container := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		affinity[container.Name] = encodeHint(getAffinity(manager, string(pod.UID), container.Name))
	}
	return answer{"admit": result.Admit, "reason": result.Reason, "message": result.Message, "affinity": affinity}
}
