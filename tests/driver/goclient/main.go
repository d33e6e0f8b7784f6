// A kubelet-side client built from upstream's own generated gRPC code (k8s.io/kubelet v0.37.2:
// pluginregistration/v1, dra/v1, dra/v1beta1): it proves kubedra's protos are wire-compatible with what the
// kubelet links. Usage: goclient REGISTRATION_SOCKET NAMESPACE UID NAME; prints one JSON document.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"kubedra/tests/driver/goclient/internal/conn"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	reg := conn.Dial(os.Args[1])
	info, err := registerapi.NewRegistrationClient(reg).GetInfo(ctx, &registerapi.InfoRequest{})
	conn.Must(err)
	_, err = registerapi.NewRegistrationClient(reg).NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true})
	conn.Must(err)
	claim := &drav1.Claim{Namespace: os.Args[2], Uid: os.Args[3], Name: os.Args[4]}
	plugin := conn.Dial(info.Endpoint)
	v1, err := drav1.NewDRAPluginClient(plugin).NodePrepareResources(ctx, &drav1.NodePrepareResourcesRequest{Claims: []*drav1.Claim{claim}})
	conn.Must(err)
	beta := &drav1beta1.Claim{Namespace: os.Args[2], Uid: os.Args[3], Name: os.Args[4]}
	v1beta1, err := drav1beta1.NewDRAPluginClient(plugin).NodePrepareResources(ctx, &drav1beta1.NodePrepareResourcesRequest{Claims: []*drav1beta1.Claim{beta}})
	conn.Must(err)
	un, err := drav1.NewDRAPluginClient(plugin).NodeUnprepareResources(ctx, &drav1.NodeUnprepareResourcesRequest{Claims: []*drav1.Claim{claim}})
	conn.Must(err)
	out, _ := json.Marshal(map[string]any{"info": info, "v1": v1, "v1beta1": v1beta1, "unprepare": un})
	fmt.Println(string(out))
}
