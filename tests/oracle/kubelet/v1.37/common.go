package main

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager/bitmask"
)

// hintJSON is a TopologyHint: affinity null for a nil NUMANodeAffinity, else its bits ascending.
type hintJSON struct {
	Affinity  *[]int `json:"affinity"`
	Preferred bool   `json:"preferred"`
}

func (h hintJSON) decode() topologymanager.TopologyHint {
	hint := topologymanager.TopologyHint{Preferred: h.Preferred}
	if h.Affinity != nil {
		mask, err := bitmask.NewBitMask(*h.Affinity...)
		if err != nil {
			panic(err)
		}
		hint.NUMANodeAffinity = mask
	}
	return hint
}

func encodeHint(h topologymanager.TopologyHint) answer {
	var affinity any
	if h.NUMANodeAffinity != nil {
		affinity = nonNil(h.NUMANodeAffinity.GetBits())
	}
	return answer{"affinity": affinity, "preferred": h.Preferred}
}

func nonNil(bits []int) []int {
	if bits == nil {
		return []int{}
	}
	return bits
}

// A provider's hints: nil map (JSON null) or resource -> nil list (null) or hints.
type hintsJSON map[string]*[]hintJSON

func decodeHints(raw *hintsJSON) map[string][]topologymanager.TopologyHint {
	if raw == nil {
		return nil
	}
	out := map[string][]topologymanager.TopologyHint{}
	for resourceName, hints := range *raw {
		if hints == nil {
			out[resourceName] = nil
			continue
		}
		list := []topologymanager.TopologyHint{}
		for _, h := range *hints {
			list = append(list, h.decode())
		}
		out[resourceName] = list
	}
	return out
}

// encodeHints keeps nil apart from empty, as the Topology Manager does.
func encodeHints(hints map[string][]topologymanager.TopologyHint) any {
	if hints == nil {
		return nil
	}
	out := answer{}
	for resourceName, list := range hints {
		if list == nil {
			out[resourceName] = nil
			continue
		}
		encoded := []answer{}
		for _, h := range list {
			encoded = append(encoded, encodeHint(h))
		}
		out[resourceName] = encoded
	}
	return out
}

type containerJSON struct {
	Name          string            `json:"name"`
	Requests      map[string]string `json:"requests"`
	Limits        map[string]string `json:"limits"`
	RestartPolicy *string           `json:"restart_policy"`
	// The Topology Manager's merged hint for this container, as its Store answers it (absent: none).
	Hint *hintJSON `json:"hint"`
}

type podJSON struct {
	UID            string          `json:"uid"`
	InitContainers []containerJSON `json:"init_containers"`
	Containers     []containerJSON `json:"containers"`
}

func resourceList(raw map[string]string) v1.ResourceList {
	if raw == nil {
		return nil
	}
	out := v1.ResourceList{}
	for name, value := range raw {
		out[v1.ResourceName(name)] = resource.MustParse(value)
	}
	return out
}

func (c containerJSON) build() v1.Container {
	container := v1.Container{
		Name:      c.Name,
		Resources: v1.ResourceRequirements{Requests: resourceList(c.Requests), Limits: resourceList(c.Limits)},
	}
	if c.RestartPolicy != nil {
		policy := v1.ContainerRestartPolicy(*c.RestartPolicy)
		container.RestartPolicy = &policy
	}
	return container
}

func (p podJSON) build() *v1.Pod {
	pod := &v1.Pod{}
	pod.Name = p.UID
	pod.Namespace = "default"
	pod.UID = types.UID(p.UID)
	for _, c := range p.InitContainers {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c.build())
	}
	for _, c := range p.Containers {
		pod.Spec.Containers = append(pod.Spec.Containers, c.build())
	}
	return pod
}

// fixedStore is the Topology Manager as the CPU and Memory Managers see it (topologymanager.Store): the
// merged hint of each container set by the case, and a policy of the case's name.
type fixedStore struct {
	policy topologymanager.Policy
	hints  map[string]map[string]topologymanager.TopologyHint
}

func newFixedStore(policyName string, pods []podJSON) *fixedStore {
	store := &fixedStore{policy: policyNamed(policyName), hints: map[string]map[string]topologymanager.TopologyHint{}}
	for _, p := range pods {
		store.hints[p.UID] = map[string]topologymanager.TopologyHint{}
		for _, c := range append(append([]containerJSON{}, p.InitContainers...), p.Containers...) {
			if c.Hint != nil {
				store.hints[p.UID][c.Name] = c.Hint.decode()
			}
		}
	}
	return store
}

func policyNamed(name string) topologymanager.Policy {
	opts := topologymanager.PolicyOptions{}
	switch name {
	case topologymanager.PolicyBestEffort:
		return topologymanager.NewBestEffortPolicy(nil, opts)
	case topologymanager.PolicyRestricted:
		return topologymanager.NewRestrictedPolicy(nil, opts)
	case topologymanager.PolicySingleNumaNode:
		return topologymanager.NewSingleNumaNodePolicy(nil, opts)
	}
	return topologymanager.NewNonePolicy()
}

func (s *fixedStore) affinity(podUID string, containerName string) topologymanager.TopologyHint {
	return s.hints[podUID][containerName]
}

func (s *fixedStore) GetPolicy() topologymanager.Policy { return s.policy }

func (s *fixedStore) Name() string { return s.policy.Name() }

// eachContainer runs step on every container of every pod in order, init containers first, and adds
// the pod and container names to what step answers.
func eachContainer(pods []podJSON, step func(*v1.Pod, *v1.Container) answer) []answer {
	var out []answer
	for _, p := range pods {
		pod := p.build()
		for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				result := step(pod, &list[i])
				result["pod"], result["name"] = p.UID, list[i].Name
				out = append(out, result)
			}
		}
	}
	return out
}

// started: a policy its constructor built (or its error), started on the empty state s.
func started[P interface{ Start(klog.Logger, S) error }, S any](policy P, s S, err error) (P, S, error) {
	if err != nil {
		return policy, s, err
	}
	return policy, s, policy.Start(logger, s)
}

func errorString(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}
