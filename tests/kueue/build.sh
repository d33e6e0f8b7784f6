#!/usr/bin/env bash
# Builds the released Kueue controller manager, sigs.k8s.io/kueue v0.17.0 (its cmd/kueue package), into
# bin/kueue-controller from the published module pinned by go.mod (which requires only what Kueue's own go.mod does,
# so the build uses Kueue's own Kubernetes and controller-runtime versions). The CRDs it serves come from the same
# module, read from Go's module cache by the tests. A rebuild with nothing changed takes seconds.
# Quiet on success; on failure Go's output is shown and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Straight to bin/: go replaces the target only after a successful link.
if ! go build -mod=readonly -buildvcs=false -trimpath -ldflags="-s -w" -o bin/kueue-controller sigs.k8s.io/kueue/cmd/kueue \
    >"$log" 2>&1; then
  echo "tests/kueue/build.sh: building kueue-controller (sigs.k8s.io/kueue/cmd/kueue) failed:" >&2
  cat "$log" >&2
  exit 1
fi
