//go:build !k8s134

// Kubernetes v1.37.2's queue API (pod groups made Pop return an entity, and the failure call was renamed).
package main

import (
	"context"
	"time"
	_ "unsafe" // go:linkname

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// newQueue builds the queue as NewTestQueue does, with a metrics recorder (Pop needs one) that flushes
// only when stop closes: its goroutine would otherwise tick for every trace's queue.
func newQueue(factory informers.SharedInformerFactory, stop <-chan struct{}, opts ...queue.Option) *queue.PriorityQueue {
	recorder := metrics.NewMetricsAsyncRecorder(10, time.Hour, stop)
	sort := &queuesort.PrioritySort{}
	return queue.NewPriorityQueue(sort.Less, factory, append([]queue.Option{queue.WithMetricsRecorder(recorder)}, opts...)...)
}

func add(q *queue.PriorityQueue, pod *v1.Pod) { q.Add(context.Background(), pod) }

func update(q *queue.PriorityQueue, old, pod *v1.Pod) { q.Update(context.Background(), old, pod) }

func deletePod(q *queue.PriorityQueue, pod *v1.Pod) { q.Delete(klog.Background(), pod) }

func pop(q *queue.PriorityQueue) *framework.QueuedPodInfo {
	entity, err := q.Pop(klog.Background())
	if err != nil {
		panic(err)
	}
	return entity.(*framework.QueuedPodInfo)
}

func getPod(q *queue.PriorityQueue, pod *v1.Pod) (*framework.QueuedPodInfo, bool) {
	return q.GetPod(pod.Name, pod.Namespace, nil)
}

// clearRejectors is what handleSchedulingFailure does first since 1.36 (kubernetes#135126).
func clearRejectors(info *framework.QueuedPodInfo) { info.ClearRejectorPlugins() }

func addUnschedulable(q *queue.PriorityQueue, logger klog.Logger, info *framework.QueuedPodInfo, cycle int64) error {
	return q.AddUnschedulablePodIfNotPresent(logger, info, cycle)
}

// The leftover flush, by its name at this release (flush.go says why go:linkname).
//
//go:linkname flushUnschedulableLeftover k8s.io/kubernetes/pkg/scheduler/backend/queue.(*PriorityQueue).flushUnschedulableEntitiesLeftover
func flushUnschedulableLeftover(q *queue.PriorityQueue, logger klog.Logger)

// preEnqueuePlugin is the PreEnqueue plugin interface of this release.
type preEnqueuePlugin = fwk.PreEnqueuePlugin
