//go:build !k8s136

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/robfig/cron/v3"
)

// cronCase is one question: the activations of schedule (with spec.timeZone
// tz, "" for none) after the Unix second start.
type cronCase struct {
	Schedule string `json:"schedule"`
	TimeZone string `json:"timeZone"`
	Start    int64  `json:"start"`
	Count    int    `json:"count"`
}

type cronAnswer struct {
	Error string  `json:"error,omitempty"`
	Times []int64 `json:"times"`
}

// runCronNext answers what the CronJob controller of kube-controller-manager
// v1.37.2 computes with github.com/robfig/cron/v3 (the version k8s.io/kubernetes
// requires): the schedule is parsed as formatSchedule builds it ("TZ=<zone> "
// prepended when a time zone is given) by cron.ParseStandard, then Next is
// called Count times from Start. The controller's local zone is taken to be
// UTC. A zero time (no activation within robfig's five years) ends the list.
func runCronNext(argv []string) int {
	if len(argv) != 0 {
		fmt.Fprintln(os.Stderr, "oracle cron-next: no arguments; JSON on stdin")
		return exitError
	}
	time.Local = time.UTC
	var cases []cronCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintf(os.Stderr, "oracle cron-next: %v\n", err)
		return exitError
	}
	answers := make([]cronAnswer, 0, len(cases))
	for _, c := range cases {
		spec := c.Schedule
		if c.TimeZone != "" {
			spec = fmt.Sprintf("TZ=%s %s", c.TimeZone, c.Schedule)
		}
		answer := cronAnswer{Times: []int64{}}
		sched, err := cron.ParseStandard(spec)
		if err != nil {
			answer.Error = err.Error()
			answers = append(answers, answer)
			continue
		}
		t := time.Unix(c.Start, 0)
		for len(answer.Times) < c.Count {
			t = sched.Next(t)
			if t.IsZero() {
				break
			}
			answer.Times = append(answer.Times, t.Unix())
		}
		answers = append(answers, answer)
	}
	if err := json.NewEncoder(os.Stdout).Encode(answers); err != nil {
		fmt.Fprintf(os.Stderr, "oracle cron-next: %v\n", err)
		return exitError
	}
	return 0
}
