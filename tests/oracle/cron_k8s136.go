//go:build k8s136

package main

import (
	"fmt"
	"os"
)

// runCronNext: the schedules are robfig/cron v3.0.1's in both releases; only
// the 1.37 oracle answers, so the 1.36 module needs no extra requirement.
func runCronNext([]string) int {
	fmt.Fprintln(os.Stderr, "oracle cron-next: only in the 1.37 oracle")
	return exitError
}
