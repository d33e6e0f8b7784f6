#!/usr/bin/env bash
# Builds the released Kubeflow training-operator manager, github.com/kubeflow/training-operator v1.9.2
# (cmd/training-operator.v1), into bin/training-operator from the published module pinned by go.mod, for the
# control-plane test that checks kubedra's PyTorchJob expansion against it. The CRD it serves comes from the same
# module, read from Go's module cache by the test. Go's module and build caches make a rebuild with nothing changed
# take seconds; a cold build takes a few minutes on a 2-core machine.
# Quiet on success; on failure Go's output is shown and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Straight to bin/: go replaces a target only after a successful link, and skips the link when the target's build
# ID is already the one it would write.
if ! go build -mod=readonly -buildvcs=false -trimpath -ldflags="-s -w" -o bin/training-operator \
  github.com/kubeflow/training-operator/cmd/training-operator.v1 >"$log" 2>&1; then
  echo "tests/kubeflow/build.sh: building training-operator failed:" >&2
  cat "$log" >&2
  exit 1
fi
