package main

import (
	"context"

	cadvisorapi "github.com/google/cadvisor/lib/model"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
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

func (p *scriptedProvider) GetTopologyHints(_ klog.Logger, _ *v1.Pod, c *v1.Container, _ lifecycle.Operation) map[string][]topologymanager.TopologyHint {
	return decodeHints(p.containers[c.Name])
}

func (p *scriptedProvider) GetPodTopologyHints(_ klog.Logger, _ *v1.Pod, _ lifecycle.Operation) map[string][]topologymanager.TopologyHint {
	return decodeHints(p.pod)
}

func (p *scriptedProvider) AllocatePod(_ klog.Logger, _ *v1.Pod, _ lifecycle.Operation) error {
	return nil
}

func (p *scriptedProvider) Allocate(_ context.Context, _ *v1.Pod, c *v1.Container, _ lifecycle.Operation) error {
	if p.failAllocate != "" && c.Name == p.failAllocate {
		return allocateError(p.allocateError)
	}
	return nil
}

type allocateError string

func (e allocateError) Error() string { return string(e) }

func runTM(c tmCase) answer {
	var topology []cadvisorapi.Node
	for _, n := range c.NUMA {
		topology = append(topology, cadvisorapi.Node{Id: n.ID, Distances: n.Distances})
	}
	manager, err := topologymanager.NewManager(logger, topology, c.Policy, c.Scope, c.Options)
	if err != nil {
		return answer{"error": err.Error()}
	}
	for _, p := range c.Providers {
		manager.AddHintProvider(logger, &scriptedProvider{p.Containers, p.Pod, p.FailAllocate, p.AllocateError})
	}
	pod := c.Pod.build()
	ctx := klog.NewContext(context.Background(), logger)
	result := manager.Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: pod, Operation: lifecycle.AddOperation})
	affinity := answer{}
	for _, container := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		affinity[container.Name] = encodeHint(manager.GetAffinity(logger, string(pod.UID), container.Name))
	}
	return answer{"admit": result.Admit, "reason": result.Reason, "message": result.Message, "affinity": affinity}
}
