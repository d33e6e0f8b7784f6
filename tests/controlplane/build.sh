#!/usr/bin/env bash
# Builds the test control plane into bin/: etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager and kubectl v1.37.2, from the published Go modules pinned by go.mod
# (kubectl/kubectl.go only makes the module require what kubectl is built from).
# Go's module and build caches make a rebuild with nothing changed take seconds; a
# cold build takes about 10 minutes on a 2-core machine (kube-apiserver alone ~6).
# Quiet on success; on failure Go's output is shown and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin
version=v1.37.2
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
done

build() { # output package
  local out=$1 pkg=$2 log
  log=$(mktemp)
  if ! go build -mod=readonly -buildvcs=false -trimpath -ldflags="$ldflags" -o "bin/$out.tmp" "$pkg" >"$log" 2>&1; then
    echo "tests/controlplane/build.sh: building $out failed:" >&2
    cat "$log" >&2
    rm -f "$log" "bin/$out.tmp"
    exit 1
  fi
  rm -f "$log"
  mv -f "bin/$out.tmp" "bin/$out"
}

build etcd ./etcd
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build kubectl k8s.io/kubernetes/cmd/kubectl  # the real kubectl, which runs the kubectl-dra plugin in its tests
