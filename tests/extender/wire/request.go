package main

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// encodeRequest is the body HTTPExtender.send posts for verb: json.Marshal of the arguments built as
// extender.go's Filter, Prioritize, ProcessPreemption and Bind build them.
func encodeRequest(verb string, d *description) ([]byte, error) {
	var args any
	switch verb {
	case "filter", "prioritize":
		args = extenderArgs(d)
	case "preempt":
		args = preemptionArgs(d)
	case "bind":
		args = bindingArgs(d)
	default:
		return nil, fmt.Errorf("unknown verb %q", verb)
	}
	return json.Marshal(args)
}

// extenderArgs: Filter and Prioritize build the same arguments. In node-cache mode NodeNames points at a
// slice made with make(.., 0, len(nodes)), so it is [] (not null) for no node, and Nodes stays nil (null);
// otherwise Nodes is a NodeList of the nodes and NodeNames nil.
func extenderArgs(d *description) *extenderv1.ExtenderArgs {
	var (
		nodeList  *v1.NodeList
		nodeNames *[]string
	)
	if d.nodeCacheCapable() {
		names := make([]string, 0, len(d.Nodes))
		names = append(names, d.Nodes...)
		nodeNames = &names
	} else {
		nodeList = &v1.NodeList{}
		for _, name := range d.Nodes {
			nodeList.Items = append(nodeList.Items, v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	}
	return &extenderv1.ExtenderArgs{Pod: d.Pod, Nodes: nodeList, NodeNames: nodeNames}
}

// preemptionArgs: in node-cache mode ProcessPreemption sends the victims as MetaVictims (convertToMetaVictims:
// each pod by its UID alone, Pods never null) and leaves NodeNameToVictims nil; otherwise the whole pods.
func preemptionArgs(d *description) *extenderv1.ExtenderPreemptionArgs {
	if !d.nodeCacheCapable() {
		return &extenderv1.ExtenderPreemptionArgs{Pod: d.Pod, NodeNameToVictims: d.NodeNameToVictims}
	}
	meta := map[string]*extenderv1.MetaVictims{}
	for node, victims := range d.NodeNameToVictims {
		metaVictims := &extenderv1.MetaVictims{Pods: []*extenderv1.MetaPod{}, NumPDBViolations: victims.NumPDBViolations}
		for _, pod := range victims.Pods {
			metaVictims.Pods = append(metaVictims.Pods, &extenderv1.MetaPod{UID: string(pod.UID)})
		}
		meta[node] = metaVictims
	}
	return &extenderv1.ExtenderPreemptionArgs{Pod: d.Pod, NodeNameToMetaVictims: meta}
}

// bindingArgs: schedule_one.go's extendersBinding makes a v1.Binding of the pod's namespace, name and UID
// and the node; Bind copies those four into ExtenderBindingArgs.
func bindingArgs(d *description) *extenderv1.ExtenderBindingArgs {
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Pod.Namespace, Name: d.Pod.Name, UID: d.Pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: d.Node},
	}
	return &extenderv1.ExtenderBindingArgs{
		PodName:      binding.Name,
		PodNamespace: binding.Namespace,
		PodUID:       binding.UID,
		Node:         binding.Target.Name,
	}
}

// newMessage is a zero value of the v1 type of verb's request or reply.
func newMessage(kind, verb string) (any, error) {
	messages := map[string]map[string]func() any{
		"request": {
			"filter":     func() any { return &extenderv1.ExtenderArgs{} },
			"prioritize": func() any { return &extenderv1.ExtenderArgs{} },
			"preempt":    func() any { return &extenderv1.ExtenderPreemptionArgs{} },
			"bind":       func() any { return &extenderv1.ExtenderBindingArgs{} },
		},
		"reply": {
			"filter":     func() any { return &extenderv1.ExtenderFilterResult{} },
			"prioritize": func() any { return &extenderv1.HostPriorityList{} },
			"preempt":    func() any { return &extenderv1.ExtenderPreemptionResult{} },
			"bind":       func() any { return &extenderv1.ExtenderBindingResult{} },
		},
	}
	byVerb, ok := messages[kind]
	if !ok {
		return nil, fmt.Errorf("unknown kind %q (request or reply)", kind)
	}
	zero, ok := byVerb[verb]
	if !ok {
		return nil, fmt.Errorf("unknown verb %q", verb)
	}
	return zero(), nil
}
