#!/usr/bin/env bash
# Builds the side-by-side harness: bin/upstream-bench, kube-scheduler's DRA
# Filter around k8s.io/dynamic-resource-allocation v0.37.2 (go.mod / go.sum),
# fed by ../../tests/oracle/kube (replace directive in go.mod): the input
# reader and kube.Cluster, the scheduler's own DRA manager and slice tracker
# from k8s.io/kubernetes v1.37.2.
# Go's module and build caches are reused, so a rebuild with nothing changed
# takes about a second. Quiet on success; on failure Go's output is shown and
# the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! go build -mod=readonly -buildvcs=false -trimpath -o bin/upstream-bench.tmp . >"$log" 2>&1; then
  echo "benchmarks/upstream/build.sh: building the harness failed:" >&2
  cat "$log" >&2
  rm -f bin/upstream-bench.tmp
  exit 1
fi
mv -f bin/upstream-bench.tmp bin/upstream-bench
