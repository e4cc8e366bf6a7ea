// Package runtimenode is the local cluster's container-runtime node: the
// real kubelet of the control plane's Kubernetes release with containerd,
// runc and the CNI reference plugins (kubebin.EnsureNodeRuntime), in a
// network namespace of its own attached to the cluster network as a process
// node's is. Pods are containers of images imported into containerd from
// OCI archives built on this machine (images.go): no registry is reached.
// It needs root, as kubelet and containerd do.
package runtimenode

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
	"github.com/paddlejob/paddlejob/internal/localcluster/serviceproxy"
)

// SandboxImage is the pod sandbox (pause) image every pod starts from, as
// containerd's CRI plugin names it; the node imports it, never pulls it.
const SandboxImage = "registry.k8s.io/pause:3.10"

// Config is a container-runtime node.
type Config struct {
	// Name is the Node's name.
	Name string
	// Kubeconfig is the kubelet's credentials (system:node:<Name>), with
	// the API server as reached from the node's network namespace.
	Kubeconfig string
	// StateDir holds containerd's and the kubelet's state and the
	// configuration files.
	StateDir string
	// Network is the node namespace's addressing, as a process node's.
	Network podnetwork.NodeConfig
	// KubeletPort is the kubelet API's port, on the node IP.
	KubeletPort int
	// TLSCertFile and TLSKeyFile serve the kubelet API; ClientCAFile is
	// the CA of its client, the API server.
	TLSCertFile, TLSKeyFile, ClientCAFile string
	// ClusterNetworkSocket is where the node attaches its uplink.
	ClusterNetworkSocket string
	// ClusterDNS is the cluster DNS server the node runs (CoreDNS, in its
	// services namespace) on the kube-dns Service's IP, which pods resolve
	// names at.
	ClusterDNS node.ClusterDNS
	// ServicesKubeconfig is the credentials of the node's Service proxy,
	// which watches every Service and EndpointSlice (the process node's
	// identity: a kubelet's may not), with the API server as reached from
	// the host.
	ServicesKubeconfig string
	// Runtime is the node's binaries.
	Runtime kubebin.NodeRuntime
	// Images are OCI archives imported into containerd before the kubelet
	// starts; the sandbox image among them.
	Images []string
	// CgroupRoot is the cgroup every pod's cgroup is made under.
	CgroupRoot string
	// MaxPods is the Node's pod capacity.
	MaxPods int
	// NodeLabels are added to the Node.
	NodeLabels string
	// GPUs is how many emulated nvidia.com/gpu the node advertises
	// (gpus.go).
	GPUs int
	Log  logr.Logger `json:"-"`
}

func (c Config) containerdRoot() string { return filepath.Join(c.StateDir, "containerd") }
func (c Config) cniConfDir() string     { return filepath.Join(c.StateDir, "cni", "net.d") }
func (c Config) kubeletRoot() string    { return filepath.Join(c.StateDir, "kubelet") }
func (c Config) podLogsDir() string     { return filepath.Join(c.StateDir, "pod-logs") }
func (c Config) tmpDir() string         { return filepath.Join(c.StateDir, "tmp") }

// ContainerdSocket is containerd's API socket.
func (c Config) ContainerdSocket() string {
	return filepath.Join(c.containerdState(), "containerd.sock")
}

// containerdState is containerd's state directory (its sockets, its
// shims' and runc's state), under /run: a shim's socket is
// <state>/s/<64 hex digits>, too long a path under a cluster's home. Its
// name is a digest of StateDir's, so two nodes never share one.
func (c Config) containerdState() string {
	sum := sha256.Sum256([]byte(c.StateDir))
	return fmt.Sprintf("/run/paddlejob/%x", sum[:6])
}

// Check says what is wrong with c before anything starts.
func (c Config) Check() error {
	if os.Geteuid() != 0 {
		return errors.New("the container-runtime node runs the kubelet and containerd, which need root: run paddlejob up as root, or leave out --node-runtime for the process node")
	}
	if c.Name == "" || c.StateDir == "" || c.Kubeconfig == "" {
		return errors.New("runtime node: a name, a state directory and a kubeconfig are required")
	}
	if c.Runtime.Kubelet == "" || c.Runtime.Binary("containerd") == "" || c.Runtime.Binary("runc") == "" || c.Runtime.CNIBin == "" {
		return errors.New("runtime node: the kubelet, containerd, runc and the CNI plugins are required (kubebin.EnsureNodeRuntime)")
	}
	return c.Network.Check()
}

// Run runs the node until ctx ends, then stops its pods, the kubelet and
// containerd, and unmounts what they mounted under StateDir.
func Run(ctx context.Context, c Config) error {
	if err := c.Check(); err != nil {
		return err
	}
	// What a killed run of this node left (its supervisor starts it again)
	// belongs to a network namespace that is gone: its pods are lost, as a
	// rebooted machine's are, and the kubelet says so.
	c.cleanUp()
	if err := c.writeFiles(); err != nil {
		return err
	}
	network, err := podnetwork.NewNodeNetwork(c.Network)
	if err != nil {
		return fmt.Errorf("creating the node's network: %w", err)
	}
	defer network.Close()
	attachCtx, detach := context.WithCancel(ctx)
	defer detach()
	go podnetwork.AttachNode(attachCtx, c.ClusterNetworkSocket, c.Network.NodeIP, network.Uplink(), c.Log)
	if err := c.runNetworkServices(attachCtx, network); err != nil {
		return fmt.Errorf("the node's Service proxy and cluster DNS server: %w", err)
	}

	if err := makeCgroupRoot(c.CgroupRoot); err != nil {
		return err
	}
	defer c.cleanUp()
	containerd, err := c.start(network.Namespace(), "containerd", c.Runtime.Binary("containerd"), "--config", c.file("containerd.toml"))
	if err != nil {
		return err
	}
	defer containerd.stop(30 * time.Second)
	if err := c.waitForSocket(ctx, containerd); err != nil {
		return err
	}
	if err := c.ImportImages(ctx, c.Images); err != nil {
		return err
	}
	kubelet, err := c.start(network.Namespace(), "kubelet", c.Runtime.Kubelet, c.kubeletArgs()...)
	if err != nil {
		return err
	}
	defer kubelet.stop(30 * time.Second)
	if c.GPUs > 0 {
		if err := c.serveGPUs(ctx); err != nil {
			return fmt.Errorf("the GPU device plugin: %w", err)
		}
	}
	c.Log.Info("Container-runtime node started", "node", c.Name, "nodeIP", c.Network.NodeIP, "containerd", c.ContainerdSocket())
	select {
	case <-ctx.Done():
		return nil
	case err := <-containerd.exited:
		return fmt.Errorf("containerd exited: %v (its log: %s)", err, containerd.logFile)
	case err := <-kubelet.exited:
		return fmt.Errorf("the kubelet exited: %v (its log: %s)", err, kubelet.logFile)
	}
}

// runNetworkServices runs the Service proxy and the cluster DNS server in
// the node's services namespace, as the process node does: the kubelet
// runs pods, not Services.
func (c Config) runNetworkServices(ctx context.Context, network *podnetwork.NodeNetwork) error {
	rest, err := clientcmd.BuildConfigFromFlags("", c.ServicesKubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return err
	}
	return node.RunNetworkServices(ctx, client, network, serviceproxy.CIDRs(c.Network.ServiceCIDRs), c.ClusterDNS, c.StateDir, c.Log)
}

func (c Config) file(name string) string { return filepath.Join(c.StateDir, name) }

// writeFiles writes containerd's, the CNI's and the kubelet's configuration.
func (c Config) writeFiles() error {
	for _, d := range []string{c.containerdRoot(), filepath.Dir(c.containerdState()), c.containerdState(), c.cniConfDir(), c.kubeletRoot(), c.podLogsDir(), c.tmpDir()} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return err
		}
		// Searchable by all, readable by root alone: a container in a user
		// namespace starts with its root's path under containerd's state
		// and kubelet's directories, as a uid other than the host's root.
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
	}
	cni, err := cniConfig(c)
	if err != nil {
		return err
	}
	kubelet, err := kubeletConfig(c)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		c.file("containerd.toml"):                              []byte(containerdConfig(c)),
		filepath.Join(c.cniConfDir(), "10-paddlejob.conflist"): cni,
		c.file("kubelet.yaml"):                                 kubelet,
	} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (c Config) kubeletArgs() []string {
	args := []string{
		"--config=" + c.file("kubelet.yaml"),
		"--kubeconfig=" + c.Kubeconfig,
		"--hostname-override=" + c.Name,
		"--node-ip=" + c.Network.NodeIP.String(),
		"--root-dir=" + c.kubeletRoot(),
		"--cert-dir=" + filepath.Join(c.kubeletRoot(), "pki"),
		"--v=1",
	}
	if len(c.NodeLabels) > 0 {
		args = append(args, "--node-labels="+c.NodeLabels)
	}
	return args
}

// child is a process of the node: containerd or the kubelet.
type child struct {
	cmd     *exec.Cmd
	logFile string
	exited  chan error
}

// start starts a child in the node's network namespace (a child forked by
// a thread in a namespace is in it), its output in <StateDir>/<name>.log.
func (c Config) start(ns *podnetwork.Namespace, name, bin string, args ...string) (*child, error) {
	logFile := c.file(name + ".log")
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	// The shim containerd starts is found on PATH. Its temporary mounts
	// (a user namespace's idmapped layers) stay under the node's directory.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(c.Runtime.Binary("containerd-shim-runc-v2"))+":"+os.Getenv("PATH"),
		"TMPDIR="+c.tmpDir())
	cmd.SysProcAttr = childAttrs()
	if err := ns.Do(cmd.Start); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	ch := &child{cmd: cmd, logFile: logFile, exited: make(chan error, 1)}
	go func() { ch.exited <- cmd.Wait() }()
	return ch, nil
}

// stop sends SIGTERM and waits up to grace, then kills.
func (ch *child) stop(grace time.Duration) {
	if ch.cmd.ProcessState != nil {
		return
	}
	_ = ch.cmd.Process.Signal(os.Interrupt)
	select {
	case <-ch.exited:
	case <-time.After(grace):
		_ = ch.cmd.Process.Kill()
		<-ch.exited
	}
}

// waitForSocket waits for containerd to serve its socket.
func (c Config) waitForSocket(ctx context.Context, containerd *child) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(c.ContainerdSocket()); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-containerd.exited:
			return fmt.Errorf("containerd exited at start: %v (its log: %s)", err, containerd.logFile)
		case <-t.C:
		}
	}
}
