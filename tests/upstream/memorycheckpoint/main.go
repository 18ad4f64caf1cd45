// Command memorycheckpoint runs the Memory Manager's checkpoint code of k8s.io/kubernetes v1.37.2
// (pkg/kubelet/cm/memorymanager/state: NewCheckpointState, its storeState and restoreState), so that the
// tests compare kubeletemu's memory_manager_state with the bytes and the reading of the real thing.
//
// Built by the tests as tests/upstream/exporters.py builds the exporters; see
// tests/memorymanager/test_checkpoint_v3_upstream.py.
//
//	memorycheckpoint write -dir D -policy P [-pod-level]   reads a MemoryManagerCheckpointData JSON on stdin,
//	                                                      stores it through the kubelet's state (the file
//	                                                      D/memory_manager_state is what the kubelet writes)
//	memorycheckpoint read -dir D -policy P [-pod-level]    restores D/memory_manager_state as the kubelet
//	                                                      does and prints {"state": …} or {"error": "…"}
//
// -pod-level turns the PodLevelResourceManagers feature gate on.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/kubelet/cm/memorymanager/state"
)

const checkpointName = "memory_manager_state"

type restored struct {
	State *state.MemoryManagerCheckpointData `json:"state,omitempty"`
	Error string                             `json:"error,omitempty"`
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: memorycheckpoint write|read -dir D -policy P [-pod-level]")
	}
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := flags.String("dir", "", "the state directory")
	policy := flags.String("policy", "Static", "the configured Memory Manager policy name")
	podLevel := flags.Bool("pod-level", false, "turn the PodLevelResourceManagers feature gate on")
	_ = flags.Parse(os.Args[2:])
	if *dir == "" {
		fail("-dir is required")
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{
		string(features.PodLevelResourceManagers): *podLevel,
	}); err != nil {
		fail(err.Error())
	}
	logger := klog.Background()
	switch os.Args[1] {
	case "write":
		write(logger, *dir, *policy)
	case "read":
		read(logger, *dir, *policy)
	default:
		fail("unknown command " + os.Args[1])
	}
}

// write stores the data read on stdin through the kubelet's own state setters: each one writes the
// checkpoint, and the last write holds all of it.
func write(logger klog.Logger, dir, policy string) {
	blob, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err.Error())
	}
	var data state.MemoryManagerCheckpointData
	if err := json.Unmarshal(blob, &data); err != nil {
		fail("stdin: " + err.Error())
	}
	st, err := state.NewCheckpointState(logger, dir, checkpointName, policy)
	if err != nil {
		fail(err.Error())
	}
	st.SetMachineState(data.MachineState)
	st.SetMemoryAssignments(data.Entries)
	st.SetPodMemoryAssignments(data.PodEntries)
}

func read(logger klog.Logger, dir, policy string) {
	var out restored
	st, err := state.NewCheckpointState(logger, dir, checkpointName, policy)
	if err != nil {
		out.Error = err.Error()
	} else {
		out.State = &state.MemoryManagerCheckpointData{
			PolicyName:   policy,
			MachineState: st.GetMachineState(),
			Entries:      st.GetMemoryAssignments(),
			PodEntries:   st.GetPodMemoryAssignments(),
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail(err.Error())
	}
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "memorycheckpoint: "+message)
	os.Exit(2)
}
