package runtimenode

import (
	"context"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	deviceplugin "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	registration "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// The GPU device plugin, asked over its socket as the kubelet asks it:
// it registers as nvidia.com/gpu's device plugin on the same socket, lists
// the node's GPUs, and gives a container the indices of those it gets.
func TestGPUDevicePlugin(t *testing.T) {
	dir, err := os.MkdirTemp("", "gpus-") // short: the socket's path must be
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c := Config{StateDir: dir, GPUs: 3, Log: logr.Discard()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.serveGPUs(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("unix://"+c.gpuPluginSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	info, err := registration.NewRegistrationClient(conn).GetInfo(ctx, &registration.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != registration.DevicePlugin || info.Name != "nvidia.com/gpu" || info.Endpoint != "" || len(info.SupportedVersions) != 1 || info.SupportedVersions[0] != deviceplugin.Version {
		t.Errorf("registration info %+v, want a %s device plugin of nvidia.com/gpu on this socket", info, deviceplugin.Version)
	}

	plugin := deviceplugin.NewDevicePluginClient(conn)
	stream, err := plugin.ListAndWatch(ctx, &deviceplugin.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range list.Devices {
		if d.Health != deviceplugin.Healthy {
			t.Errorf("device %s is %s", d.ID, d.Health)
		}
		ids = append(ids, d.ID)
	}
	if len(ids) != 3 || ids[0] != "0" || ids[2] != "2" {
		t.Errorf("devices %v, want 0, 1, 2", ids)
	}

	resp, err := plugin.Allocate(ctx, &deviceplugin.AllocateRequest{ContainerRequests: []*deviceplugin.ContainerAllocateRequest{
		{DevicesIds: []string{"0", "2"}}, {DevicesIds: []string{"1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ContainerResponses) != 2 || resp.ContainerResponses[0].Envs["NVIDIA_VISIBLE_DEVICES"] != "0,2" ||
		resp.ContainerResponses[1].Envs["NVIDIA_VISIBLE_DEVICES"] != "1" {
		t.Errorf("allocation %+v, want NVIDIA_VISIBLE_DEVICES 0,2 and 1", resp.ContainerResponses)
	}
	if _, ok := resp.ContainerResponses[0].Envs["CUDA_VISIBLE_DEVICES"]; ok {
		t.Error("CUDA_VISIBLE_DEVICES set: Paddle's launcher would configure NCCL on a CPU build")
	}
}
