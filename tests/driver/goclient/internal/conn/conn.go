// Package conn is what both kubelet-side clients share: the gRPC connection to one of the driver's unix sockets
// (the registration socket, then the plugin endpoint GetInfo names) and the exit on the first error.
package conn

import (
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Dial connects to the unix socket at path without TLS, as the kubelet connects to a plugin; exit 1 if it cannot.
func Dial(path string) *grpc.ClientConn {
	c, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	Must(err)
	return c
}

// Must exits 1 with err on stderr (the test reads it): a client stops at its first failed call.
func Must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
