#!/usr/bin/env bash
# Builds the released Kubeflow Trainer controller manager, github.com/kubeflow/trainer/v2 v2.3.0
# (cmd/trainer-controller-manager), into bin/trainer-controller-manager from the published module pinned by go.mod,
# for the control-plane test that checks kubedra's TrainJob expansion against it. The CRDs, the runtimes and the
# webhook configuration it serves come from the same module, read from Go's module cache by the test; the JobSet
# controller it hands its JobSets to is tests/sigs' build. Go's module and build caches make a rebuild with nothing
# changed take seconds; a cold build takes a few minutes on a 2-core machine.
# Quiet on success; on failure Go's output is shown and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Straight to bin/: go replaces a target only after a successful link, and skips the link when the target's build
# ID is already the one it would write.
if ! go build -mod=readonly -buildvcs=false -trimpath -ldflags="-s -w" -o bin/trainer-controller-manager \
  github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager >"$log" 2>&1; then
  echo "tests/trainer/build.sh: building trainer-controller-manager failed:" >&2
  cat "$log" >&2
  exit 1
fi
