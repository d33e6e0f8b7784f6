//go:build tools

// Package tools only makes this module require what ray-operator's manager is built from: the manager is the
// module's root (main) package, which build.sh builds and which cannot be imported, so this imports what its
// main.go imports (go mod tidy then keeps every module and checksum the build needs).
package tools

import (
	_ "github.com/go-logr/zapr"
	_ "github.com/openshift/api/route/v1"
	_ "go.uber.org/zap"
	_ "gopkg.in/natefinch/lumberjack.v2"
	_ "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/client-go/kubernetes/scheme"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/log/zap"
	_ "sigs.k8s.io/gateway-api/apis/v1"

	_ "github.com/ray-project/kuberay/ray-operator/apis/config/v1alpha1"
	_ "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	_ "github.com/ray-project/kuberay/ray-operator/controllers/ray"
	_ "github.com/ray-project/kuberay/ray-operator/controllers/ray/batchscheduler"
	_ "github.com/ray-project/kuberay/ray-operator/controllers/ray/metrics"
	_ "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	_ "github.com/ray-project/kuberay/ray-operator/pkg/features"
	_ "github.com/ray-project/kuberay/ray-operator/pkg/webhooks/v1"
)
