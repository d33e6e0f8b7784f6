//go:build tools

// Package tools only makes this module require what the Kubeflow Trainer controller manager is built from: the
// manager is a main package (github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager), which build.sh builds
// and which cannot be imported, so this imports what its main.go imports (go mod tidy then keeps every module and
// checksum the build needs).
package tools

import (
	_ "go.uber.org/zap"
	_ "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/client-go/kubernetes/scheme"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/healthz"
	_ "sigs.k8s.io/controller-runtime/pkg/log/zap"
	_ "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	_ "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	_ "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	_ "github.com/kubeflow/trainer/v2/pkg/apis/config/v1alpha1"
	_ "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	_ "github.com/kubeflow/trainer/v2/pkg/config"
	_ "github.com/kubeflow/trainer/v2/pkg/controller"
	_ "github.com/kubeflow/trainer/v2/pkg/features"
	_ "github.com/kubeflow/trainer/v2/pkg/runtime"
	_ "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	_ "github.com/kubeflow/trainer/v2/pkg/statusserver"
	_ "github.com/kubeflow/trainer/v2/pkg/util/cert"
	_ "github.com/kubeflow/trainer/v2/pkg/webhooks"
)
