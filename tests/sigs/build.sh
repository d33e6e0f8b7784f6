#!/usr/bin/env bash
# Builds the released JobSet and LeaderWorkerSet controllers' managers, sigs.k8s.io/jobset v0.12.0 (its root package)
# and sigs.k8s.io/lws v0.9.0 (its cmd package), into bin/jobset-controller and bin/lws-controller from the published
# modules pinned by go.mod (one module for both: their Kubernetes and controller-runtime versions agree to the patch
# release, so Go's minimal version selection builds both against k8s.io v0.36.2 and controller-runtime v0.24.1 and
# the cold build compiles those once). The CRDs and webhook configurations they serve come from the same modules, read
# from Go's module cache by the tests. A rebuild with nothing changed takes seconds.
# Quiet on success; on failure Go's output is shown and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Straight to bin/: go replaces a target only after a successful link, and skips the link when the target's build ID
# is already the one it would write. One go build per binary (go build -o DIR would need both to be main packages of
# the same pattern list, and the shared packages are compiled once either way through the build cache).
for target in "jobset-controller sigs.k8s.io/jobset" "lws-controller sigs.k8s.io/lws/cmd"; do
  set -- $target
  if ! go build -mod=readonly -buildvcs=false -trimpath -ldflags="-s -w" -o "bin/$1" "$2" >"$log" 2>&1; then
    echo "tests/sigs/build.sh: building $1 ($2) failed:" >&2
    cat "$log" >&2
    exit 1
  fi
done
