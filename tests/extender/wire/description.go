package main

import (
	"encoding/json"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// description is the scheduler's side of one extender call: what HTTPExtender is given (the pod, the
// feasible nodes, the preemption candidates, the chosen node) and the configuration it reads, from which
// encode-request builds the body and decode-reply judges the reply.
type description struct {
	// URLPrefix is the extender's urlPrefix; HTTPExtender names itself by it in its errors.
	URLPrefix string `json:"urlPrefix"`
	// NodeCacheCapable is the extender's nodeCacheCapable (true when absent: kubeletemu's extender is
	// configured so). False sends whole Node objects, here with their names alone.
	NodeCacheCapable *bool `json:"nodeCacheCapable"`
	// Weight is the extender's weight, by which Prioritize's scores are multiplied (1 when absent).
	Weight *int64 `json:"weight"`
	// Pod is the pod being scheduled, as the scheduler holds it.
	Pod *v1.Pod `json:"pod"`
	// Nodes are the names of the nodes Filter or Prioritize is called with, in the scheduler's order.
	Nodes []string `json:"nodes"`
	// NodeNameToVictims are Preempt's candidates: per node, the victims the in-tree preemption chose.
	NodeNameToVictims map[string]*extenderv1.Victims `json:"nodeNameToVictims"`
	// NodePods are the UIDs of further pods on the candidates (besides their victims) in the scheduler's
	// snapshot, which an extender may name as victims too.
	NodePods map[string][]string `json:"nodePods"`
	// Node is the node Bind binds the pod to.
	Node string `json:"node"`
}

func readDescription(r io.Reader) (*description, error) {
	decoder := json.NewDecoder(r)
	decoder.DisallowUnknownFields()
	var desc description
	if err := decoder.Decode(&desc); err != nil {
		return nil, fmt.Errorf("description: %w", err)
	}
	if desc.Pod == nil {
		return nil, fmt.Errorf("description: no pod")
	}
	if desc.URLPrefix == "" {
		desc.URLPrefix = "https://127.0.0.1:8888/kubeletemu"
	}
	return &desc, nil
}

func (d *description) nodeCacheCapable() bool {
	return d.NodeCacheCapable == nil || *d.NodeCacheCapable
}

func (d *description) weight() int64 {
	if d.Weight == nil {
		return 1
	}
	return *d.Weight
}
