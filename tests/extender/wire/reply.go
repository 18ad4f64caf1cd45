package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// maxNodeScore is the scheduler's MaxNodeScore (100: k8s.io/kube-scheduler/framework at v0.37.2,
// k8s.io/kubernetes/pkg/scheduler/framework at v1.34.7), to which prioritizeNodes scales extender scores.
const maxNodeScore int64 = 100

// decodedReply is what decode-reply prints: the reply as Go re-encodes what it decoded (null when it could
// not decode it), and what the scheduler does with it.
type decodedReply struct {
	Canonical *string `json:"canonical"`
	Reads     any     `json:"reads"`
}

// decodeReply decodes body as HTTPExtender.send does: json.NewDecoder(resp.Body).Decode(result), which
// matches keys case-insensitively, ignores unknown keys and reads the first JSON value only.
func decodeReply(verb string, d *description, body []byte) (*decodedReply, error) {
	result, err := newMessage("reply", verb)
	if err != nil {
		return nil, err
	}
	decodeErr := json.NewDecoder(bytes.NewReader(body)).Decode(result)
	out := &decodedReply{}
	if decodeErr == nil {
		canonical, err := json.Marshal(result)
		if err != nil {
			return nil, err
		}
		text := string(canonical)
		out.Canonical = &text
	}
	switch r := result.(type) {
	case *extenderv1.ExtenderFilterResult:
		out.Reads = readFilter(d, r, decodeErr)
	case *extenderv1.HostPriorityList:
		out.Reads = readPrioritize(d, *r, decodeErr)
	case *extenderv1.ExtenderPreemptionResult:
		out.Reads = readPreempt(d, r, decodeErr)
	case *extenderv1.ExtenderBindingResult:
		out.Reads = readBind(r, decodeErr)
	}
	return out, nil
}

func errorText(err error) *string {
	text := err.Error()
	return &text
}

// nodeStatus is the status findNodesThatPassExtenders records for a node the extender failed.
type nodeStatus struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// filterReads is what HTTPExtender.Filter returns and findNodesThatPassExtenders makes of it.
type filterReads struct {
	// Error: Filter's error. The pod's attempt fails with it, or the extender is skipped if ignorable.
	Error *string `json:"error"`
	// Feasible: the nodes passed on to the next extender and to scoring, in the reply's order.
	Feasible []string `json:"feasible"`
	// Statuses: the failed nodes' statuses; FailedAndUnresolvableNodes wins over FailedNodes.
	Statuses map[string]nodeStatus `json:"statuses"`
	// Unnamed: the request's nodes neither feasible nor failed. They get no status of the extender's, so
	// NodeToStatus's absent-node status (UnschedulableAndUnresolvable) stands: preemption never tries them.
	Unnamed []string `json:"unnamed"`
}

func readFilter(d *description, r *extenderv1.ExtenderFilterResult, decodeErr error) filterReads {
	if decodeErr != nil {
		return filterReads{Error: errorText(decodeErr)}
	}
	if r.Error != "" {
		return filterReads{Error: &r.Error}
	}
	input := map[string]bool{}
	for _, name := range d.Nodes {
		input[name] = true
	}
	feasible := []string{}
	// Node-cache mode reads NodeNames when it is not null; a null NodeNames falls through to Nodes, and with
	// both null no node passes (the same as []).
	if d.nodeCacheCapable() && r.NodeNames != nil {
		for _, name := range *r.NodeNames {
			if !input[name] {
				return filterReads{Error: errorText(fmt.Errorf(
					"extender %q claims a filtered node %q which is not found in the input node list",
					d.URLPrefix, name))}
			}
			feasible = append(feasible, name)
		}
	} else if r.Nodes != nil {
		for i := range r.Nodes.Items {
			feasible = append(feasible, r.Nodes.Items[i].Name)
		}
	}
	statuses := map[string]nodeStatus{}
	for name, reason := range r.FailedAndUnresolvableNodes {
		statuses[name] = nodeStatus{Code: "UnschedulableAndUnresolvable", Reason: reason}
	}
	for name, reason := range r.FailedNodes {
		if _, found := r.FailedAndUnresolvableNodes[name]; found {
			continue
		}
		statuses[name] = nodeStatus{Code: "Unschedulable", Reason: reason}
	}
	passed := map[string]bool{}
	for _, name := range feasible {
		passed[name] = true
	}
	unnamed := []string{}
	for _, name := range d.Nodes {
		if _, failed := statuses[name]; !failed && !passed[name] {
			unnamed = append(unnamed, name)
		}
	}
	return filterReads{Feasible: feasible, Statuses: statuses, Unnamed: unnamed}
}

// prioritizeReads is what prioritizeNodes adds to the nodes' scores from one extender's reply.
type prioritizeReads struct {
	// Error: the scheduler logs it (V(5)) and adds no score from this extender; the pod is scheduled.
	Error *string `json:"error"`
	// Scores: per node of the request, score * weight * (MaxNodeScore / MaxExtenderPriority), summed over
	// the entries naming it; never clamped (int64 arithmetic, as upstream).
	Scores map[string]int64 `json:"scores"`
	// Dropped: hosts the reply scores that are not among the request's nodes; their scores go nowhere.
	Dropped []string `json:"dropped"`
}

func readPrioritize(d *description, list extenderv1.HostPriorityList, decodeErr error) prioritizeReads {
	if decodeErr != nil {
		return prioritizeReads{Error: errorText(decodeErr)}
	}
	input := map[string]bool{}
	for _, name := range d.Nodes {
		input[name] = true
	}
	weight := d.weight()
	scores := map[string]int64{}
	dropped := []string{}
	for _, entry := range list {
		finalScore := entry.Score * weight * (maxNodeScore / extenderv1.MaxExtenderPriority)
		if !input[entry.Host] {
			dropped = append(dropped, entry.Host)
			continue
		}
		scores[entry.Host] += finalScore
	}
	return prioritizeReads{Scores: scores, Dropped: dropped}
}

// victimsReads is one candidate node's victims after convertToVictims: the pods by UID.
type victimsReads struct {
	Pods             []string `json:"pods"`
	NumPDBViolations int64    `json:"numPDBViolations"`
}

// preemptReads is what ProcessPreemption and the Evaluator's callExtenders make of a reply.
type preemptReads struct {
	// Error: preemption fails for this pod with it (unless the extender is ignorable).
	Error *string `json:"error"`
	// Candidates: the nodes preemption goes on with, and their victims.
	Candidates map[string]victimsReads `json:"candidates"`
}

func readPreempt(d *description, r *extenderv1.ExtenderPreemptionResult, decodeErr error) preemptReads {
	if decodeErr != nil {
		return preemptReads{Error: errorText(decodeErr)}
	}
	candidates, err := convertToVictims(d, r.NodeNameToMetaVictims)
	if err != nil {
		return preemptReads{Error: errorText(err)}
	}
	// callExtenders: a node returned without a victim is an error (the reply's map order decides which
	// node upstream names when several are; here the first by name).
	for _, node := range sortedKeys(candidates) {
		if len(candidates[node].Pods) == 0 {
			return preemptReads{Error: errorText(fmt.Errorf("expected at least one victim pod on node %q", node))}
		}
	}
	return preemptReads{Candidates: candidates}
}

// convertToVictims resolves the reply's victims against the scheduler's snapshot (the request's candidates
// and their pods) as HTTPExtender.convertToVictims does, dereferencing what it dereferences: a null
// MetaVictims or MetaPod is a nil-pointer panic there, reported here as an error.
func convertToVictims(d *description, meta map[string]*extenderv1.MetaVictims) (out map[string]victimsReads, err error) {
	defer func() {
		if recovered := recover(); recovered != nil {
			out, err = nil, fmt.Errorf("kube-scheduler panics: %v", recovered)
		}
	}()
	snapshot := map[string]map[string]bool{}
	for node, victims := range d.NodeNameToVictims {
		snapshot[node] = map[string]bool{}
		for _, pod := range victims.Pods {
			snapshot[node][string(pod.UID)] = true
		}
	}
	for node, uids := range d.NodePods {
		if snapshot[node] == nil {
			snapshot[node] = map[string]bool{}
		}
		for _, uid := range uids {
			snapshot[node][uid] = true
		}
	}
	out = map[string]victimsReads{}
	for _, node := range sortedKeys(meta) {
		metaVictims := meta[node]
		pods, known := snapshot[node]
		if !known {
			return nil, fmt.Errorf("nodeinfo not found for node name %q", node)
		}
		victims := victimsReads{Pods: []string{}, NumPDBViolations: metaVictims.NumPDBViolations}
		for _, metaPod := range metaVictims.Pods {
			if !pods[metaPod.UID] {
				return nil, fmt.Errorf(
					"extender: %v claims to preempt pod (UID: %v) on node: %v, but the pod is not found on that node",
					d.URLPrefix, metaPod, node)
			}
			victims.Pods = append(victims.Pods, metaPod.UID)
		}
		out[node] = victims
	}
	return out, nil
}

// bindReads is what HTTPExtender.Bind returns: an error makes the binding fail (the scheduler unreserves
// and requeues the pod) unless the extender is ignorable, when the next binder binds it.
type bindReads struct {
	Error *string `json:"error"`
}

func readBind(r *extenderv1.ExtenderBindingResult, decodeErr error) bindReads {
	if decodeErr != nil {
		return bindReads{Error: errorText(decodeErr)}
	}
	if r.Error != "" {
		return bindReads{Error: &r.Error}
	}
	return bindReads{}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}
