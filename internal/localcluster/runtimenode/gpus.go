package runtimenode

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	deviceplugin "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	registration "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// The node's GPUs are emulated, as the process node's are (--gpus): a
// device plugin, the kubelet's own way to learn of devices, advertises
// them as nvidia.com/gpu, and a container allotted some gets what NVIDIA's
// plugin gives it, NVIDIA_VISIBLE_DEVICES naming them; its programs run on
// the CPU. The plugin registers through the kubelet's plugin directory
// (<root-dir>/plugins_registry), not the device-plugin socket, whose path
// the kubelet fixes at /var/lib/kubelet/device-plugins for every kubelet
// of the machine.

// gpuResource is the extended resource of NVIDIA's device plugin.
const gpuResource = "nvidia.com/gpu"

func (c Config) gpuPluginSocket() string {
	return filepath.Join(c.kubeletRoot(), "plugins_registry", "paddlejob-gpus.sock")
}

// serveGPUs serves the GPU device plugin until ctx ends.
func (c Config) serveGPUs(ctx context.Context) error {
	socket := c.gpuPluginSocket()
	if err := os.MkdirAll(filepath.Dir(socket), 0o750); err != nil {
		return err
	}
	_ = os.Remove(socket)
	l, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	p := &gpuPlugin{count: c.GPUs}
	registration.RegisterRegistrationServer(srv, p)
	deviceplugin.RegisterDevicePluginServer(srv, p)
	go func() {
		<-ctx.Done()
		srv.Stop()
		os.Remove(socket)
	}()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			c.Log.Error(err, "The GPU device plugin stopped")
		}
	}()
	return nil
}

// gpuPlugin is the registration service the kubelet's plugin watcher asks
// and the device plugin it then talks to, on one socket.
type gpuPlugin struct {
	registration.UnimplementedRegistrationServer
	deviceplugin.UnimplementedDevicePluginServer
	count int
}

func (p *gpuPlugin) GetInfo(context.Context, *registration.InfoRequest) (*registration.PluginInfo, error) {
	// No endpoint: the device plugin is on this socket too.
	return &registration.PluginInfo{Type: registration.DevicePlugin, Name: gpuResource, SupportedVersions: []string{deviceplugin.Version}}, nil
}

func (p *gpuPlugin) NotifyRegistrationStatus(context.Context, *registration.RegistrationStatus) (*registration.RegistrationStatusResponse, error) {
	return &registration.RegistrationStatusResponse{}, nil
}

func (p *gpuPlugin) GetDevicePluginOptions(context.Context, *deviceplugin.Empty) (*deviceplugin.DevicePluginOptions, error) {
	return &deviceplugin.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices once: they never change.
func (p *gpuPlugin) ListAndWatch(_ *deviceplugin.Empty, stream grpc.ServerStreamingServer[deviceplugin.ListAndWatchResponse]) error {
	devices := make([]*deviceplugin.Device, p.count)
	for i := range devices {
		devices[i] = &deviceplugin.Device{ID: strconv.Itoa(i), Health: deviceplugin.Healthy}
	}
	if err := stream.Send(&deviceplugin.ListAndWatchResponse{Devices: devices}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

// Allocate gives each container the indices of its devices, as NVIDIA's
// plugin does. CUDA_VISIBLE_DEVICES stays unset: Paddle's launcher would
// take it for GPUs and configure NCCL on a CPU build.
func (p *gpuPlugin) Allocate(_ context.Context, req *deviceplugin.AllocateRequest) (*deviceplugin.AllocateResponse, error) {
	resp := &deviceplugin.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses, &deviceplugin.ContainerAllocateResponse{
			Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": strings.Join(c.DevicesIds, ",")},
		})
	}
	return resp, nil
}
