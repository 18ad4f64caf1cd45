// Command oracle answers kubeletemu's node-side differential cases with the kubelet's own packages at
// k8s.io/kubernetes v1.37.2: the Topology Manager (NewManager, Admit), the static CPU Manager policy
// (NewStaticPolicy, GetTopologyHints, Allocate) and the static Memory Manager policy (NewPolicyStatic,
// GetTopologyHints, Allocate). It imports them and copies nothing.
//
// Protocol: one JSON case per stdin line ({"model": "tm"|"cpu"|"memory", ...}, or a JSON array of
// them), one JSON answer per stdout line (an array for an array). A panic inside upstream code is
// answered {"panic": "<value>"} and the harness goes on with the next case. tests/oracle/ holds the
// Python side (the generators, the converter and the runner).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/debug"

	"github.com/go-logr/logr"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/kubernetes/pkg/features" // registers the kubelet's gates with their defaults at this release
)

// The kubelet logs at V(0) on every admission and allocation: discarded, or they would dominate.
var logger = logr.Discard()

type answer = map[string]any

func dispatch(raw json.RawMessage) (out answer) {
	defer func() {
		if r := recover(); r != nil {
			// The stack says where upstream panicked: part of the finding, with the case.
			out = answer{"panic": fmt.Sprint(r), "stack": string(debug.Stack())}
		}
	}()
	var head struct {
		Model        string          `json:"model"`
		FeatureGates map[string]bool `json:"feature_gates"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return answer{"harness_error": err.Error()}
	}
	if err := setFeatureGates(head.FeatureGates); err != nil {
		return answer{"harness_error": err.Error()}
	}
	var err error
	switch head.Model {
	case "tm":
		var c tmCase
		if err = json.Unmarshal(raw, &c); err == nil {
			return runTM(c)
		}
	case "cpu":
		var c cpuCase
		if err = json.Unmarshal(raw, &c); err == nil {
			return runCPU(c)
		}
	case "memory":
		var c memoryCase
		if err = json.Unmarshal(raw, &c); err == nil {
			return runMemory(c)
		}
	default:
		err = fmt.Errorf("unknown model %q", head.Model)
	}
	return answer{"harness_error": err.Error()}
}

// gateDefaults: the release's default of every gate a case has set so far, restored when the next case
// does not set it (each case runs on the defaults plus its own feature_gates).
var gateDefaults = map[string]bool{}

func setFeatureGates(gates map[string]bool) error {
	if len(gates) == 0 && len(gateDefaults) == 0 {
		return nil
	}
	want := map[string]bool{}
	for name, enabled := range gateDefaults {
		want[name] = enabled
	}
	for name, enabled := range gates {
		if _, seen := gateDefaults[name]; !seen {
			gateDefaults[name] = utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name))
		}
		want[name] = enabled
	}
	if maps.Equal(want, applied) {
		return nil
	}
	applied = want
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(want)
}

// applied: the gates the last SetFromMap set (SetFromMap clones the gate's maps: skipped when unchanged).
var applied map[string]bool

func main() {
	flag.Parse()
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	encoder := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 && !blank(line) {
			if line[firstNonSpace(line)] == '[' {
				var cases []json.RawMessage
				if jerr := json.Unmarshal(line, &cases); jerr != nil {
					must(encoder.Encode(answer{"harness_error": jerr.Error()}))
				} else {
					answers := make([]answer, len(cases))
					for i, c := range cases {
						answers[i] = dispatch(c)
					}
					must(encoder.Encode(answers))
				}
			} else {
				must(encoder.Encode(dispatch(line)))
			}
			// Answer each line at once: the runner writes a case and reads its answer.
			must(out.Flush())
		}
		if err == io.EOF {
			return
		}
		must(err)
	}
}

func blank(line []byte) bool { return firstNonSpace(line) == len(line) }

func firstNonSpace(line []byte) int {
	for i, b := range line {
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' {
			return i
		}
	}
	return len(line)
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "oracle:", err)
		os.Exit(2)
	}
}
