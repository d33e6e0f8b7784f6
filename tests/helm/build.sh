#!/usr/bin/env bash
# Builds Helm v4.3.1 into bin/helm from the published helm.sh/helm/v4 module pinned by
# go.mod, for the chart tests (helm lint, helm template, helm install into the test
# control plane). Go's module and build caches make a rebuild with nothing changed take
# seconds; a cold build takes a few minutes on a 2-core machine.
# Quiet on success; on failure Go's output is shown and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
version=v4.3.1
ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$version"
log=$(mktemp)
if ! go build -mod=readonly -buildvcs=false -trimpath -ldflags="$ldflags" -o bin/helm.tmp helm.sh/helm/v4/cmd/helm >"$log" 2>&1; then
  echo "tests/helm/build.sh: building helm failed:" >&2
  cat "$log" >&2
  rm -f "$log" bin/helm.tmp
  exit 1
fi
rm -f "$log"
mv -f bin/helm.tmp bin/helm
