#!/usr/bin/env bash
# Builds the real KubeRay operator's manager, ray-operator v1.5.0, into bin/ray-operator from the published
# github.com/ray-project/kuberay/ray-operator module pinned by go.mod (its root package is the manager), for the
# control-plane test that checks kubedra's RayCluster/RayJob expansion against it. The CRDs it serves come from the
# same module (config/crd/bases), read from Go's module cache by the test. Go's module and build caches make a
# rebuild with nothing changed take seconds; a cold build takes a couple of minutes on a 2-core machine.
# Quiet on success; on failure Go's output is shown and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
log=$(mktemp)
# Straight to bin/: go replaces a target only after a successful link, and skips the link when the target's build
# ID is already the one it would write.
if ! go build -mod=readonly -buildvcs=false -trimpath -ldflags="-s -w" -o bin/ray-operator \
  github.com/ray-project/kuberay/ray-operator >"$log" 2>&1; then
  echo "tests/kuberay/build.sh: building ray-operator failed:" >&2
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
