//go:build tools

// Package tools only makes this module require what the JobSet and LeaderWorkerSet managers are built from: each
// manager is a main package (sigs.k8s.io/jobset's root, sigs.k8s.io/lws/cmd), which build.sh builds and which cannot
// be imported, so this imports what their main.go files import (go mod tidy then keeps every module and checksum the
// builds need).
package tools

import (
	_ "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/client-go/kubernetes/scheme"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/healthz"
	_ "sigs.k8s.io/controller-runtime/pkg/log/zap"
	_ "sigs.k8s.io/controller-runtime/pkg/manager"
	_ "sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	_ "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	_ "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	_ "sigs.k8s.io/jobset/api/config/v1alpha1"
	_ "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	_ "sigs.k8s.io/jobset/pkg/config"
	_ "sigs.k8s.io/jobset/pkg/controllers"
	_ "sigs.k8s.io/jobset/pkg/features"
	_ "sigs.k8s.io/jobset/pkg/metrics"
	_ "sigs.k8s.io/jobset/pkg/util/cert"
	_ "sigs.k8s.io/jobset/pkg/util/tlsconfig"
	_ "sigs.k8s.io/jobset/pkg/util/useragent"
	_ "sigs.k8s.io/jobset/pkg/version"
	_ "sigs.k8s.io/jobset/pkg/webhooks"

	_ "sigs.k8s.io/lws/api/config/v1alpha1"
	_ "sigs.k8s.io/lws/api/disaggregatedset/v1"
	_ "sigs.k8s.io/lws/api/leaderworkerset/v1"
	_ "sigs.k8s.io/lws/pkg/cert"
	_ "sigs.k8s.io/lws/pkg/config"
	_ "sigs.k8s.io/lws/pkg/controllers"
	_ "sigs.k8s.io/lws/pkg/controllers/disaggregatedset"
	_ "sigs.k8s.io/lws/pkg/schedulerprovider"
	_ "sigs.k8s.io/lws/pkg/utils"
	_ "sigs.k8s.io/lws/pkg/utils/useragent"
	_ "sigs.k8s.io/lws/pkg/version"
	_ "sigs.k8s.io/lws/pkg/webhooks"
	_ "sigs.k8s.io/lws/pkg/webhooks/disaggregatedset"
)
