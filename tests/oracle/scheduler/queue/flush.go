package main

import (
	_ "unsafe" // go:linkname

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/backend/queue"
)

// The periodic flushes Run starts on goroutines (on the real clock, for the leftover one), called
// directly as the package's own tests do; linkname.s lets them be declared without bodies.
//
//go:linkname flushBackoffQCompleted k8s.io/kubernetes/pkg/scheduler/backend/queue.(*PriorityQueue).flushBackoffQCompleted
func flushBackoffQCompleted(q *queue.PriorityQueue, logger klog.Logger)
