package main

import (
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Timing annotations of kubedra simulate (benchmarks/workloads.py sets them
// on the steady-state workloads): a pod arrives start-after into the run and
// finishes run-for after it was bound (Go durations; no run-for: runs on).
const (
	startAfterAnnotation = "kubedra.io/start-after"
	runForAnnotation     = "kubedra.io/run-for"
)

// arrival is a pod and a moment in simulated time: when it arrives (with
// runFor, -1 for never finishing), or when it finishes (in the running list).
type arrival struct {
	pod    *v1.Pod
	at     time.Duration
	runFor time.Duration
}

// timeline orders the pods by arrival, file order within one instant, as the
// simulator does.
func timeline(pods []*v1.Pod) ([]arrival, error) {
	out := make([]arrival, 0, len(pods))
	for _, pod := range pods {
		a := arrival{pod: pod, runFor: -1}
		if text, ok := pod.Annotations[startAfterAnnotation]; ok {
			d, err := time.ParseDuration(text)
			if err != nil {
				return nil, fmt.Errorf("pod %s/%s: %s: %w", pod.Namespace, pod.Name, startAfterAnnotation, err)
			}
			a.at = d
		}
		if text, ok := pod.Annotations[runForAnnotation]; ok {
			d, err := time.ParseDuration(text)
			if err != nil {
				return nil, fmt.Errorf("pod %s/%s: %s: %w", pod.Namespace, pod.Name, runForAnnotation, err)
			}
			a.runFor = d
		}
		out = append(out, a)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out, nil
}

// finishUntil releases every running pod whose finish time is at or before
// now, earliest first (bind order within one instant), and returns the rest.
func finishUntil(s *scheduler, running []arrival, now time.Duration) []arrival {
	if len(running) == 0 {
		return running
	}
	sort.SliceStable(running, func(i, j int) bool { return running[i].at < running[j].at })
	n := 0
	for n < len(running) && running[n].at <= now {
		s.release(running[n].pod)
		n++
	}
	return running[n:]
}
