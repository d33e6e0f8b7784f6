#!/usr/bin/env bash
# Builds the upstream-allocator oracle once per emulated Kubernetes release:
#   bin/oracle-1.37  (go.mod / go.sum: k8s.io/dynamic-resource-allocation v0.37.x)
#   bin/oracle-1.36  (k8s-1.36.mod / k8s-1.36.sum: v0.36.x, build tag k8s136)
# Go's module and build caches are reused, so a rebuild with nothing changed
# takes about a second. Quiet on success; on failure Go's output is shown and
# the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin

build() { # release modfile tags
  local release=$1 modfile=$2 tags=$3 log
  log=$(mktemp)
  if ! go build -mod=readonly -buildvcs=false -trimpath -modfile="$modfile" -tags="$tags" \
      -o "bin/oracle-$release.tmp" . >"$log" 2>&1; then
    echo "tests/oracle/build.sh: building the Kubernetes $release oracle failed:" >&2
    cat "$log" >&2
    rm -f "$log" "bin/oracle-$release.tmp"
    exit 1
  fi
  rm -f "$log"
  mv -f "bin/oracle-$release.tmp" "bin/oracle-$release"
}

build 1.37 go.mod ""
build 1.36 k8s-1.36.mod k8s136
