// Package kubectl makes the module require what kubectl (k8s.io/kubernetes/cmd/kubectl) builds from, so
// build.sh can build the real kubectl binary at the pinned version (tests of the kubectl-dra plugin run it).
package kubectl

import _ "k8s.io/kubectl/pkg/cmd"
