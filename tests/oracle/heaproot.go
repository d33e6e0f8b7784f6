//go:build !k8s136

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// runHeapRoot answers which node kube-scheduler v1.37.2's schedulePod takes
// from a list of total scores: it reads a JSON list of lists of totals (each
// in Filter's order) on stdin and writes, for each, the index of the node
// that framework.NewSortedScoredNodes(...).Pop() returns (no extenders, so
// every Randomizer is 0, as in schedulePod).
func runHeapRoot(argv []string) int {
	if len(argv) != 0 {
		fmt.Fprintln(os.Stderr, "oracle heap-root: no arguments; JSON on stdin")
		return exitError
	}
	var lists [][]int64
	if err := json.NewDecoder(os.Stdin).Decode(&lists); err != nil {
		fmt.Fprintf(os.Stderr, "oracle heap-root: %v\n", err)
		return exitError
	}
	roots := make([]int, 0, len(lists))
	for _, totals := range lists {
		if len(totals) == 0 {
			fmt.Fprintln(os.Stderr, "oracle heap-root: an empty list has no root")
			return exitError
		}
		scores := make([]fwk.NodePluginScores, len(totals))
		for i, total := range totals {
			scores[i] = fwk.NodePluginScores{Name: strconv.Itoa(i), TotalScore: total}
		}
		root, err := strconv.Atoi(framework.NewSortedScoredNodes(scores).Pop().Name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "oracle heap-root: %v\n", err)
			return exitError
		}
		roots = append(roots, root)
	}
	if err := json.NewEncoder(os.Stdout).Encode(roots); err != nil {
		fmt.Fprintf(os.Stderr, "oracle heap-root: %v\n", err)
		return exitError
	}
	return 0
}
