//go:build k8s136

package main

import (
	"fmt"
	"os"
)

// runHeapRoot: v1.36 keeps the same heap unexported in pkg/scheduler
// (schedule_one.go), out of an importer's reach; only the 1.37 oracle answers.
func runHeapRoot([]string) int {
	fmt.Fprintln(os.Stderr, "oracle heap-root: only in the 1.37 oracle")
	return exitError
}
