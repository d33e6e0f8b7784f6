#!/usr/bin/env bash
# Builds the real node of tests/kubelet into bin/:
#   kubelet v1.37.2            from tests/controlplane's module (the same pins as the control plane, so most of
#                              k8s.io/kubernetes comes out of Go's build cache after tests/controlplane/build.sh);
#   containerd, ctr, containerd-shim-runc-v2 v2.4.2
#                              with `go install ...@v2.4.2` (containerd's own go.mod; static, CGO_ENABLED=0);
#   kdimage                    the static program inside the tests' images (image/: pause and probe).
# runc is Debian's (apt-get install runc; .ci/run installs it). Go's module and build caches make a rebuild with
# nothing changed take seconds; a cold build takes several minutes on a 2-core machine (see README.md).
# Quiet on success; on failure Go's output is shown and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")"
here=$PWD
mkdir -p bin
kubernetes=v1.37.2
containerd=v2.4.2

fail() { # what log
  echo "tests/kubelet/build.sh: building $1 failed:" >&2
  cat "$2" >&2
  rm -f "$2"
  exit 1
}

k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$kubernetes -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
done
log=$(mktemp)
# -trimpath and the environment's CGO setting, as tests/controlplane/build.sh: the two share the build cache.
# Straight to bin/: go replaces a target only after a successful link, and skips the link (~1 min of a warm
# rebuild on 2 busy cores) when the target's build ID is already the one it would write.
if ! (cd ../controlplane && go build -mod=readonly -buildvcs=false -trimpath -ldflags="$k8s_ldflags" \
  -o "$here/bin/kubelet" k8s.io/kubernetes/cmd/kubelet) >"$log" 2>&1; then
  fail kubelet "$log"
fi

# containerd's Makefile: the same tags and version ldflags; no cgo (btrfs drops out by its build tag).
ctrd_ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd"
ctrd_ldflags+=" -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2"
module=github.com/containerd/containerd/v2/cmd
if ! CGO_ENABLED=0 GOBIN="$here/bin" GOFLAGS= go install -trimpath -tags urfave_cli_no_docs -ldflags="$ctrd_ldflags" \
  "$module/containerd@$containerd" "$module/ctr@$containerd" >"$log" 2>&1; then
  fail "containerd and ctr" "$log"
fi
if ! CGO_ENABLED=0 GOBIN="$here/bin" GOFLAGS= go install -trimpath -tags "urfave_cli_no_docs no_grpc" \
  -ldflags="$ctrd_ldflags" "$module/containerd-shim-runc-v2@$containerd" >"$log" 2>&1; then
  fail containerd-shim-runc-v2 "$log"
fi

if ! (cd image && CGO_ENABLED=0 go build -mod=readonly -buildvcs=false -trimpath -ldflags="-s -w" \
  -o "$here/bin/kdimage" .) >"$log" 2>&1; then
  fail "the image program" "$log"
fi
rm -f "$log"
