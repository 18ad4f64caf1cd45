// Command queue replays event traces through kube-scheduler's own PriorityQueue
// (k8s.io/kubernetes/pkg/scheduler/backend/queue) on a fake clock and answers, step by step, what it
// did: the pod each Pop returned, the moves scheduler_queue_incoming_pods_total counted, and where every
// pod is. tests/oracle/queue_runner.py sends the same traces to kubeletemu.fleet.queue and compares.
//
// stdin: one trace per line (JSON, see trace below); stdout: one answer per line. The feature gates are
// flags (-gates SchedulerPopFromBackoffQ=false), the same for every trace of a run. A panic in upstream
// code ends that trace's answer with "panic" and the step's index; the next trace runs.
//
// Built per Kubernetes release from one source: go.mod pins v1.37.2, go.1.34.mod (with -tags k8s134)
// v1.34.7; the release's API differences live in shim_137.go and shim_134.go.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	testingclock "k8s.io/utils/clock/testing"
)

// podSpec is the part of a pod the queue reads that the traces vary.
type podSpec struct {
	Name        string            `json:"name"`
	UID         string            `json:"uid"`
	Priority    int32             `json:"priority"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Gates       []string          `json:"gates,omitempty"`
}

type registration struct {
	Plugin string `json:"plugin"`
	Event  string `json:"event"`
	Hint   bool   `json:"hint"` // false: registered without a QueueingHintFn (always Queue)
}

type step struct {
	Op            string                       `json:"op"`
	NS            int64                        `json:"ns,omitempty"`
	Pod           json.RawMessage              `json:"pod,omitempty"`
	Unschedulable []string                     `json:"unschedulable,omitempty"`
	Pending       []string                     `json:"pending,omitempty"`
	Pick          int                          `json:"pick,omitempty"`
	Event         string                       `json:"event,omitempty"`
	ID            int                          `json:"id,omitempty"`
	Answers       map[string]map[string]string `json:"answers,omitempty"`
}

type trace struct {
	ID                  string         `json:"id"`
	ClockNS             int64          `json:"clock_ns"`
	InitialBackoffS     float64        `json:"initial_backoff_s"`
	MaxBackoffS         float64        `json:"max_backoff_s"`
	MaxInUnschedulableS float64        `json:"max_in_unschedulable_s"`
	Registrations       []registration `json:"registrations"`
	PreEnqueue          bool           `json:"pre_enqueue"` // the SchedulingGates PreEnqueue plugin
	Steps               []step         `json:"steps"`
}

type popped struct {
	Name              string `json:"name"`
	Attempts          int    `json:"attempts"`
	UnschedulableCnt  int    `json:"unschedulable_count"`
	ConsecutiveErrors int    `json:"consecutive_errors"`
	TimestampNS       int64  `json:"timestamp_ns"`
	InitialAttemptNS  int64  `json:"initial_attempt_ns"`
}

type where struct {
	Active        []string `json:"active"`
	Backoff       []string `json:"backoff"`
	Unschedulable []string `json:"unschedulable"`
	InFlight      []string `json:"in_flight"`
}

type stepAnswer struct {
	Pop   *popped        `json:"pop,omitempty"`
	Error string         `json:"error,omitempty"`
	Moves map[string]int `json:"moves"`
	Where where          `json:"where"`
}

type answer struct {
	ID       string       `json:"id"`
	Steps    []stepAnswer `json:"steps"`
	Panic    string       `json:"panic,omitempty"`
	PanicAt  int          `json:"panic_at,omitempty"`
	Stack    string       `json:"stack,omitempty"`
	Problems []string     `json:"problems,omitempty"`
}

// schedulingGates gates a pod while it has scheduling gates, as the in-tree SchedulingGates plugin's
// PreEnqueue does (its events are the trace's registrations for "SchedulingGates").
type schedulingGates struct{}

func (schedulingGates) Name() string { return "SchedulingGates" }

func (schedulingGates) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	if len(pod.Spec.SchedulingGates) == 0 {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "waiting for scheduling gates")
}

func preEnqueueOption(plugin preEnqueuePlugin) queue.Option {
	return queue.WithPreEnqueuePluginMap(map[string]map[string]preEnqueuePlugin{
		v1.DefaultSchedulerName: {plugin.Name(): plugin},
	})
}

// eventObject is what a trace's cluster event carries as its new object: the hint functions look up
// their answer for a pod by the event's id.
type eventObject struct{ ID int }

const hintAnnotation = "oracle.hint/"

// run is one trace's state.
type run struct {
	q       *queue.PriorityQueue
	clock   *testingclock.FakeClock
	pods    map[string]*v1.Pod
	infos   map[string]*framework.QueuedPodInfo // in flight, by name
	flight  []string                            // in flight, in pop order
	gone    map[string]bool                     // deleted, or bound (Done after its cycle)
	answers map[int]map[string]map[string]string
	counts  map[string]float64
}

var incoming = k8smetrics.NewKubeRegistry()

func main() {
	gates := flag.String("gates", "", "feature gates, name=bool,...")
	flag.Parse()
	if *gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(*gates); err != nil {
			fmt.Fprintln(os.Stderr, "queue oracle:", err)
			os.Exit(2)
		}
	}
	klog.SetLogger(logr.Discard()) // upstream logs every failing hint; the answers say what happened
	metrics.Register()
	incoming.MustRegister(metrics.SchedulerQueueIncomingPods)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<28)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		var t trace
		if err := json.Unmarshal(in.Bytes(), &t); err != nil {
			fmt.Fprintln(os.Stderr, "queue oracle: bad trace:", err)
			os.Exit(2)
		}
		if err := enc.Encode(replay(&t)); err != nil {
			fmt.Fprintln(os.Stderr, "queue oracle:", err)
			os.Exit(1)
		}
		out.Flush()
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "queue oracle:", err)
		os.Exit(1)
	}
}

func seconds(s, fallback float64) time.Duration {
	if s == 0 {
		s = fallback
	}
	return time.Duration(s * float64(time.Second))
}

func replay(t *trace) (a answer) {
	a.ID = t.ID
	r := &run{
		clock:   testingclock.NewFakeClock(time.Unix(0, t.ClockNS)),
		pods:    map[string]*v1.Pod{},
		infos:   map[string]*framework.QueuedPodInfo{},
		gone:    map[string]bool{},
		answers: map[int]map[string]map[string]string{},
	}
	hintMap, err := r.hintMap(t.Registrations)
	if err != nil {
		a.Problems = append(a.Problems, err.Error())
		return a
	}
	opts := []queue.Option{
		queue.WithClock(r.clock),
		queue.WithPodInitialBackoffDuration(seconds(t.InitialBackoffS, 1)),
		queue.WithPodMaxBackoffDuration(seconds(t.MaxBackoffS, 10)),
		queue.WithPodMaxInUnschedulablePodsDuration(seconds(t.MaxInUnschedulableS, 300)),
		queue.WithQueueingHintMapPerProfile(queue.QueueingHintMapPerProfile{v1.DefaultSchedulerName: hintMap}),
	}
	if t.PreEnqueue {
		opts = append(opts, preEnqueueOption(schedulingGates{}))
	}
	stop := make(chan struct{})
	defer close(stop)
	r.q = newQueue(informers.NewSharedInformerFactory(nil, 0), stop, opts...)
	defer r.q.Close()
	r.counts = gatherIncoming()
	index := 0
	defer func() {
		if p := recover(); p != nil {
			a.Panic = fmt.Sprint(p)
			a.PanicAt = index
			a.Stack = string(debug.Stack())
		}
	}()
	for i := range t.Steps {
		index = i
		var s stepAnswer
		if err := r.apply(&t.Steps[i], &s); err != nil {
			a.Problems = append(a.Problems, fmt.Sprintf("step %d: %v", i, err))
			return a
		}
		s.Moves = r.moves()
		s.Where = r.where()
		a.Steps = append(a.Steps, s)
	}
	return a
}

func (r *run) hintMap(regs []registration) (queue.QueueingHintMap, error) {
	m := queue.QueueingHintMap{}
	for _, reg := range regs {
		event, err := parseEvent(reg.Event)
		if err != nil {
			return nil, err
		}
		fn := queueAlways
		if reg.Hint {
			fn = r.hint(reg.Plugin)
		}
		m[event] = append(m[event], &queue.QueueingHintFunction{PluginName: reg.Plugin, QueueingHintFn: fn})
	}
	return m, nil
}

// queueAlways is kube-scheduler's defaultQueueingHintFn, which buildQueueingHintMap gives a registration
// without a function.
func queueAlways(klog.Logger, *v1.Pod, interface{}, interface{}) (fwk.QueueingHint, error) {
	return fwk.Queue, nil
}

// hint answers from the trace: by the event's id and the pod's name, or for a pod update by the new pod's
// oracle.hint/<plugin> annotation; QueueSkip when the trace says nothing.
func (r *run) hint(plugin string) fwk.QueueingHintFn {
	return func(_ klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
		said := ""
		switch obj := newObj.(type) {
		case *eventObject:
			said = r.answers[obj.ID][plugin][pod.Name]
		case *v1.Pod:
			said = obj.Annotations[hintAnnotation+plugin]
		}
		switch said {
		case "Queue":
			return fwk.Queue, nil
		case "Error":
			return fwk.QueueSkip, fmt.Errorf("oracle: %s's hint fails", plugin)
		default:
			return fwk.QueueSkip, nil
		}
	}
}

var actionNames = func() map[string]fwk.ActionType {
	names := map[string]fwk.ActionType{"Update": fwk.Update, "All": fwk.All}
	for bit := fwk.ActionType(1); bit != 0 && bit&fwk.All != 0; bit <<= 1 {
		names[bit.String()] = bit
	}
	return names
}()

// parseEvent reads "Node/Add|UpdateNodeLabel" (the resource may itself hold a slash).
func parseEvent(text string) (fwk.ClusterEvent, error) {
	cut := strings.LastIndex(text, "/")
	if cut < 0 {
		return fwk.ClusterEvent{}, fmt.Errorf("event %q: want resource/action", text)
	}
	var action fwk.ActionType
	for _, name := range strings.Split(text[cut+1:], "|") {
		bit, ok := actionNames[name]
		if !ok {
			return fwk.ClusterEvent{}, fmt.Errorf("event %q: no action %q in this release", text, name)
		}
		action |= bit
	}
	return fwk.ClusterEvent{Resource: fwk.EventResource(text[:cut]), ActionType: action}, nil
}

func (r *run) pod(raw json.RawMessage) (*v1.Pod, error) {
	var spec podSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, err
	}
	priority := spec.Priority
	var gates []v1.PodSchedulingGate
	for _, name := range spec.Gates {
		gates = append(gates, v1.PodSchedulingGate{Name: name})
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: spec.Name, Namespace: "default", UID: types.UID(spec.UID),
			Labels: spec.Labels, Annotations: spec.Annotations,
		},
		Spec: v1.PodSpec{Priority: &priority, SchedulerName: v1.DefaultSchedulerName, SchedulingGates: gates},
	}, nil
}

// named is the pod a step names; nil for one deleted or bound (upstream would not see the call).
func (r *run) named(raw json.RawMessage) (*v1.Pod, error) {
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return nil, err
	}
	pod, ok := r.pods[name]
	if !ok {
		return nil, fmt.Errorf("unknown pod %q", name)
	}
	if r.gone[name] {
		return nil, nil
	}
	return pod, nil
}

// picked takes the in-flight pod a fail or done step picks (modulo their number, in pop order).
func (r *run) picked(pick int) *framework.QueuedPodInfo {
	if len(r.flight) == 0 {
		return nil
	}
	i := pick % len(r.flight)
	name := r.flight[i]
	r.flight = append(r.flight[:i:i], r.flight[i+1:]...)
	info := r.infos[name]
	delete(r.infos, name)
	return info
}

func (r *run) apply(s *step, out *stepAnswer) error {
	logger := klog.Background()
	switch s.Op {
	case "tick":
		r.clock.Step(time.Duration(s.NS))
	case "add":
		pod, err := r.pod(s.Pod)
		if err != nil {
			return err
		}
		r.pods[pod.Name] = pod
		add(r.q, pod)
	case "update":
		pod, err := r.pod(s.Pod)
		if err != nil {
			return err
		}
		if r.gone[pod.Name] {
			return nil
		}
		old := r.pods[pod.Name]
		r.pods[pod.Name] = pod
		update(r.q, old, pod)
	case "delete":
		pod, err := r.named(s.Pod)
		if err != nil || pod == nil {
			return err
		}
		r.gone[pod.Name] = true
		deletePod(r.q, pod)
	case "pop":
		if !r.poppable() {
			return nil // Pop would block
		}
		info := pop(r.q)
		r.infos[info.Pod.Name] = info
		r.flight = append(r.flight, info.Pod.Name)
		out.Pop = describe(info)
	case "fail":
		info := r.picked(s.Pick)
		if info == nil {
			return nil
		}
		if r.gone[info.Pod.Name] { // deleted during its cycle: handleSchedulingFailure only calls Done
			r.q.Done(info.Pod.UID)
			return nil
		}
		clearRejectors(info)
		info.UnschedulablePlugins = sets.New(s.Unschedulable...)
		info.PendingPlugins = sets.New(s.Pending...)
		if err := addUnschedulable(r.q, logger, info, r.q.SchedulingCycle()); err != nil {
			out.Error = err.Error()
		}
	case "done":
		info := r.picked(s.Pick)
		if info == nil {
			return nil
		}
		r.gone[info.Pod.Name] = true
		r.q.Done(info.Pod.UID)
	case "event":
		event, err := parseEvent(s.Event)
		if err != nil {
			return err
		}
		r.answers[s.ID] = s.Answers
		r.q.MoveAllToActiveOrBackoffQueue(logger, event, nil, &eventObject{ID: s.ID}, nil)
	case "activate":
		pod, err := r.named(s.Pod)
		if err != nil || pod == nil {
			return err
		}
		r.q.Activate(logger, map[string]*v1.Pod{pod.Name: pod})
	case "flush_backoff":
		flushBackoffQCompleted(r.q, logger)
	case "flush_unschedulable":
		flushUnschedulableLeftover(r.q, logger)
	default:
		return fmt.Errorf("unknown op %q", s.Op)
	}
	return nil
}

// poppable is whether Pop would return now: activeQ holds a pod, or SchedulerPopFromBackoffQ is on and
// podBackoffQ does (its pods failed with a rejecting plugin; podErrorBackoffQ's are not popped early).
func (r *run) poppable() bool {
	if len(r.q.PodsInActiveQ()) > 0 {
		return true
	}
	if !utilfeature.DefaultFeatureGate.Enabled("SchedulerPopFromBackoffQ") {
		return false
	}
	for _, pod := range r.q.PodsInBackoffQ() {
		if info, ok := getPod(r.q, pod); ok && info.UnschedulablePlugins.Len()+info.PendingPlugins.Len() > 0 {
			return true
		}
	}
	return false
}

func describe(info *framework.QueuedPodInfo) *popped {
	p := &popped{
		Name:              info.Pod.Name,
		Attempts:          info.Attempts,
		UnschedulableCnt:  info.UnschedulableCount,
		ConsecutiveErrors: info.ConsecutiveErrorsCount,
		TimestampNS:       info.Timestamp.UnixNano(),
	}
	if info.InitialAttemptTimestamp != nil {
		p.InitialAttemptNS = info.InitialAttemptTimestamp.UnixNano()
	}
	return p
}

func names(pods []*v1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, pod := range pods {
		out = append(out, pod.Name)
	}
	sort.Strings(out)
	return out
}

func (r *run) where() where {
	return where{
		Active:        names(r.q.PodsInActiveQ()),
		Backoff:       names(r.q.PodsInBackoffQ()),
		Unschedulable: names(r.q.UnschedulablePods()),
		InFlight:      names(r.q.InFlightPods()),
	}
}

// moves is what scheduler_queue_incoming_pods_total counted since the last step, by "queue/event".
func (r *run) moves() map[string]int {
	now := gatherIncoming()
	out := map[string]int{}
	for key, value := range now {
		if d := int(value - r.counts[key]); d != 0 {
			out[key] = d
		}
	}
	r.counts = now
	return out
}

func gatherIncoming() map[string]float64 {
	families, err := incoming.Gather()
	if err != nil {
		panic(err)
	}
	out := map[string]float64{}
	for _, family := range families {
		for _, m := range family.Metric {
			out[label(m, "queue")+"/"+label(m, "event")] = m.GetCounter().GetValue()
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, pair := range m.Label {
		if pair.GetName() == name {
			return pair.GetValue()
		}
	}
	return ""
}
