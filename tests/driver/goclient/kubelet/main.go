// The kubelet's own DRA plugin manager (k8s.io/kubernetes v1.37.2 pkg/kubelet/cm/dra/plugin) as the client of
// kubedra's driver: ValidatePlugin and RegisterPlugin with what GetInfo advertised, then NodePrepareResources and
// NodeUnprepareResources through the manager's DRAPlugin, and the health stream it opens.
// Usage: kubelet REGISTRATION_SOCKET NAMESPACE UID NAME; prints one JSON document.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/dra/plugin"

	"kubedra/tests/driver/goclient/internal/conn"
)

type health struct {
	first chan *drahealthv1.NodeWatchResourcesResponse
}

func (h *health) HandleWatchResourcesStream(ctx context.Context, stream drahealthv1.DRAResourceHealth_NodeWatchResourcesClient, _ string) error {
	message, err := stream.Recv()
	if err != nil {
		return err
	}
	select {
	case h.first <- message:
	default:
	}
	<-ctx.Done()
	return nil
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reg := conn.Dial(os.Args[1])
	info, err := registerapi.NewRegistrationClient(reg).GetInfo(ctx, &registerapi.InfoRequest{})
	conn.Must(err)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}}
	h := &health{first: make(chan *drahealthv1.NodeWatchResourcesResponse, 1)}
	manager := plugin.NewDRAPluginManager(ctx, fake.NewClientset(node),
		func(context.Context) (*v1.Node, error) { return node, nil }, h, time.Second)
	conn.Must(manager.ValidatePlugin(ctx, info.Name, info.Endpoint, info.SupportedVersions))
	conn.Must(manager.RegisterPlugin(ctx, info.Name, info.Endpoint, info.SupportedVersions, nil))
	_, err = registerapi.NewRegistrationClient(reg).NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true})
	conn.Must(err)
	p, err := manager.GetPlugin(info.Name)
	conn.Must(err)
	claim := &drav1.Claim{Namespace: os.Args[2], Uid: os.Args[3], Name: os.Args[4]}
	prepared, err := p.NodePrepareResources(ctx, &drav1.NodePrepareResourcesRequest{Claims: []*drav1.Claim{claim}})
	conn.Must(err)
	unprepared, err := p.NodeUnprepareResources(ctx, &drav1.NodeUnprepareResourcesRequest{Claims: []*drav1.Claim{claim}})
	conn.Must(err)
	var first *drahealthv1.NodeWatchResourcesResponse
	select {
	case first = <-h.first:
	case <-time.After(10 * time.Second):
	}
	out, _ := json.Marshal(map[string]any{"prepare": prepared, "unprepare": unprepared, "health": first})
	fmt.Println(string(out))
	manager.Stop()
}
