//go:build tools

// Package tools only makes this module require what Kubeflow's training-operator v1.9.2 manager is built from: the
// manager is a main package (github.com/kubeflow/training-operator/cmd/training-operator.v1), which build.sh builds
// and which cannot be imported, so this imports what its main.go imports (go mod tidy then keeps every module and
// checksum the build needs).
package tools

import (
	_ "go.uber.org/zap/zapcore"
	_ "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/client-go/kubernetes/scheme"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/healthz"
	_ "sigs.k8s.io/controller-runtime/pkg/log/zap"
	_ "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	_ "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	_ "volcano.sh/apis/pkg/client/clientset/versioned"

	_ "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	_ "github.com/kubeflow/training-operator/pkg/cert"
	_ "github.com/kubeflow/training-operator/pkg/config"
	_ "github.com/kubeflow/training-operator/pkg/controller.v1"
	_ "github.com/kubeflow/training-operator/pkg/controller.v1/common"
	_ "github.com/kubeflow/training-operator/pkg/webhooks"
)
