package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	vknode "github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
	"github.com/paddlejob/paddlejob/internal/localcluster/serviceproxy"
)

// Defaults of the node's settings.
const (
	DefaultNodeName = "paddlejob-node"
	// DefaultNodeIP is the node's InternalIP, on a link of the node's
	// network namespace (podnetwork.NodeNetwork).
	DefaultNodeIP = "172.18.0.2"
	// DefaultPodCIDR is the pods' network, on the bridge in the node's
	// namespace; pods get its addresses 10.244.X.100-254 (ipam.go).
	DefaultPodCIDR = "10.244.0.0/16"
	// DefaultNodesCIDR is the nodes' network, which the node IP is on.
	DefaultNodesCIDR           = "172.18.0.0/16"
	DefaultKubeletPort         = 10250
	DefaultMaxPods             = 500
	DefaultShutdownGracePeriod = 5 * time.Second
	// DefaultPodPidsLimit caps each container's processes and threads. The
	// busiest container of the end-to-end suite's Paddle jobs peaked at 117
	// on 2 cores (docs/local-node.md#resource-limits); a fork bomb stops
	// here, far below a machine's pid_max (32768 by default).
	DefaultPodPidsLimit = 4096
	// DefaultTmpSize and DefaultShmSize size each sandbox's /tmp and
	// /dev/shm (a pod wanting more mounts an emptyDir, as on Kubernetes).
	DefaultTmpSize = 1 << 30
	DefaultShmSize = 256 << 20
)

// DefaultServiceCIDR is the cluster IPs, local to the node's network
// namespace (see Config.ServiceCIDR).
const DefaultServiceCIDR = serviceproxy.DefaultCIDR

// podSyncWorkers is how many pods virtual-kubelet syncs at once; the
// provider's calls return quickly, so a few suffice.
const podSyncWorkers = 8

// Config configures a process node.
type Config struct {
	// RESTConfig reaches the API server.
	RESTConfig *rest.Config
	NodeName   string
	// StateDir holds the pods' directories (logs, volumes) and the
	// self-signed serving certificate.
	StateDir string
	// HiddenPaths are host directories no pod may see, besides StateDir:
	// the local cluster hides its whole state (keys, kubeconfigs, etcd).
	HiddenPaths []string
	// HiddenFiles are host files no pod may mount, nor a directory holding
	// one: the local cluster hides the user's kubeconfigs, which hold its
	// admin credentials.
	HiddenFiles []string
	// HostPathRO and HostPathRW are the host directories whose paths (and
	// the paths inside them) pods may mount, read-only and read-write,
	// through hostPath volumes and hostPath or local PersistentVolumes;
	// besides them only the image table's build contexts (read-only) and
	// their output/ (read-write). Every other host path is refused, and
	// none may be or hold StateDir, a hidden path or file, /proc, /sys or
	// /dev.
	HostPathRO []string
	HostPathRW []string
	// NodeIP is the node's InternalIP, on a link of the node's network
	// namespace: the kubelet API listens there, and hostNetwork pods, which
	// run in that namespace, have it. Not a loopback address.
	NodeIP string
	// PodCIDR is the pods' network: its first address is their gateway, on
	// the bridge in the node's namespace, and each other pod gets an address
	// of it whose last octet is 100-254, in a network namespace of its own.
	PodCIDR string
	// KubeletPort is the kubelet API's port; 0 picks a free one.
	KubeletPort int
	// TLSCertFile and TLSKeyFile serve the kubelet API; a self-signed pair
	// is made in StateDir when empty.
	TLSCertFile, TLSKeyFile string
	// ClientCAFile, when set, admits only clients with a certificate it
	// signed.
	ClientCAFile string
	// ImageTableFile maps images to local commands (see ImageTable).
	ImageTableFile string
	MaxPods        int
	// Capacity overrides resources of the host's capacity. Requests are not
	// reserved (limits are enforced per container, limits.go), so a
	// development machine may advertise more than it has to schedule jobs
	// sized for a real cluster, overcommitting itself. It may add
	// extended resources: nvidia.com/gpu makes the node offer emulated GPUs
	// (see gpuEnv).
	Capacity corev1.ResourceList
	// NodeLabels are added to the Node's labels (e.g. accelerator:
	// nvidia-tesla-p100 for pods with that nodeSelector); see
	// ValidateNodeLabels.
	NodeLabels map[string]string
	// PodPidsLimit caps each container's processes and threads; 0 is
	// DefaultPodPidsLimit, negative none.
	PodPidsLimit int64
	// PodMemoryLimit is the memory limit of a container without one, in
	// bytes; 0 is half the host's memory, negative none.
	PodMemoryLimit int64
	// TmpSize and ShmSize size each sandbox's /tmp and /dev/shm tmpfs, in
	// bytes; 0 is DefaultTmpSize and DefaultShmSize.
	TmpSize, ShmSize int64
	// Bwrap is bubblewrap's path; empty looks it up on PATH.
	Bwrap string
	// ShutdownGracePeriod caps each pod's grace period when the node stops.
	ShutdownGracePeriod time.Duration
	// PodAPIServer is the API server's URL as pods are given it
	// (KUBERNETES_SERVICE_HOST and _PORT): on the local cluster its forward
	// on the cluster network's host address. Empty: RESTConfig's.
	PodAPIServer string
	// NodesCIDR is the nodes' network: NodeIP sits on the node's uplink
	// with its prefix length, and every other node's IP is reached over it.
	// Default DefaultNodesCIDR.
	NodesCIDR string
	// ClusterPodCIDR is every node's pods, PodCIDR being this node's share:
	// the rest is reached over the uplink. Empty: PodCIDR (one node).
	ClusterPodCIDR string
	// ClusterNetworkSocket, when set, is the Unix socket of the cluster
	// network the node attaches its uplink to (podnetwork.AttachNode): the
	// other nodes, and the host's forwarded endpoints, are behind it.
	ClusterNetworkSocket string
	// ServiceCIDR is the cluster IPs (comma-separated CIDRs) whose Services
	// the node proxies to their endpoints; they are local to the node's
	// network namespace (any of them may be bound there). Default
	// DefaultServiceCIDR.
	ServiceCIDR string
	// ClusterDNS, when its Binary is set, is the cluster DNS server the
	// node runs in its network namespace (clusterdns.go); pods resolve
	// names with it.
	ClusterDNS ClusterDNS
	Log        logr.Logger
	Clock      clock.Clock
}

// Node is a process node: virtual-kubelet's controllers around a Provider.
type Node struct {
	cfg          Config
	log          logr.Logger
	client       kubernetes.Interface
	podInformers informers.SharedInformerFactory
	objInformers informers.SharedInformerFactory
	events       record.EventBroadcaster
	provider     *Provider
	pods         *vknode.PodController
	nodes        *vknode.NodeController
	nodeStatus   *vknode.NaiveNodeProviderV2
	node         *corev1.Node
	server       *kubeletServer
	services     *serviceproxy.Proxy
	// network is the node's network namespace and the bridge its pods hang
	// off; closed when Run returns (or New fails).
	network *podnetwork.NodeNetwork
	ready   chan struct{}
	// hostIDs, on a root node, are its pods' host ids and their staging.
	hostIDs *sandboxHostIDs
}

// New prepares a node: it loads its settings, opens the kubelet API port and
// builds the controllers, but registers nothing until Run.
func New(cfg Config) (*Node, error) {
	cfg, in, err := checkConfig(cfg)
	if err != nil {
		return nil, err
	}
	client, err := nodeClient(cfg)
	if err != nil {
		return nil, err
	}
	network, err := podnetwork.NewNodeNetwork(in.network)
	if err != nil {
		return nil, fmt.Errorf("creating the pod network: %w%s", err, networkPrivilegeHint(err))
	}
	n, err := newNode(cfg, in, client, network)
	if err != nil {
		network.Close()
		return nil, err
	}
	return n, nil
}

// networkPrivilegeHint explains a pod network the node may not create.
func networkPrivilegeHint(err error) string {
	if errors.Is(err, syscall.EPERM) {
		return " (creating network namespaces and links takes CAP_SYS_ADMIN, CAP_NET_ADMIN and CAP_NET_RAW: run the node as root, or in a user namespace of its own, as paddlejob up does)"
	}
	return ""
}

func newNode(cfg Config, in nodeInputs, client kubernetes.Interface, network *podnetwork.NodeNetwork) (_ *Node, err error) {
	images, ipRange, capacity, serviceCIDRs, stateDir := in.images, in.ipRange, in.capacity, in.serviceCIDRs, cfg.StateDir
	n := &Node{cfg: cfg, log: cfg.Log, client: client, network: network, ready: make(chan struct{})}
	n.podInformers = informers.NewSharedInformerFactoryWithOptions(client, time.Minute,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
		}))
	n.objInformers = informers.NewSharedInformerFactory(client, 0)
	podInformer := n.podInformers.Core().V1().Pods()
	cmInformer := n.objInformers.Core().V1().ConfigMaps()
	secretInformer := n.objInformers.Core().V1().Secrets()
	serviceInformer := n.objInformers.Core().V1().Services()

	n.events = record.NewBroadcaster()
	recorder := n.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "paddlejob-node", Host: cfg.NodeName})

	sandbox := sandboxSettings{
		asRoot:  os.Geteuid() == 0,
		limits:  DefaultLimits{MemoryBytes: max(cfg.PodMemoryLimit, 0), Pids: max(cfg.PodPidsLimit, 0)},
		node:    hostNodeLimits(capacity),
		tmpSize: cfg.TmpSize,
		shmSize: cfg.ShmSize,
	}
	if sandbox.asRoot {
		if sandbox.hostIDs, err = newSandboxHostIDs(stateDir); err != nil {
			return nil, err
		}
		n.hostIDs = sandbox.hostIDs
		defer func() {
			if err != nil {
				n.hostIDs.stager.close()
			}
		}()
	}
	n.provider = newProvider(providerConfig{
		Log:         cfg.Log,
		Clock:       cfg.Clock,
		Client:      client,
		Pods:        podInformer.Lister(),
		ConfigMaps:  cmInformer.Lister(),
		Secrets:     secretInformer.Lister(),
		Recorder:    recorder,
		Images:      images,
		IPs:         newIPAllocator(ipRange, cfg.NodeIP, podnetwork.Gateway(in.network.PodCIDR).String(), podnetwork.ServicesIP(in.network.PodCIDR).String()),
		Network:     network,
		Allocatable: capacity,
		StateDir:    stateDir,
		HiddenPaths: cfg.HiddenPaths,
		HiddenFiles: cfg.HiddenFiles,
		HostPathRO:  cfg.HostPathRO,
		HostPathRW:  cfg.HostPathRW,
		NodeIP:      cfg.NodeIP,
		Bwrap:       cfg.Bwrap,
		APIServer:   cfg.PodAPIServer,
		ClusterDNS:  cfg.ClusterDNS.address(),
		Sandbox:     sandbox,
	})
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: n.provider.podDeleted}); err != nil {
		return nil, err
	}
	for _, inf := range []cache.SharedIndexInformer{cmInformer.Informer(), secretInformer.Informer()} {
		if _, err := inf.AddEventHandler(namespaceChangeHandler(n.provider.objectsChanged)); err != nil {
			return nil, err
		}
	}
	if n.services, err = newServiceProxy(cfg.Log, n.objInformers, serviceCIDRs, network.ServicesNamespace()); err != nil {
		return nil, err
	}

	if n.server, err = openKubeletAPI(cfg); err != nil {
		return nil, err
	}

	if err := n.newControllers(client, recorder, capacity, podInformer, cmInformer, secretInformer, serviceInformer); err != nil {
		n.server.close()
		return nil, err
	}
	return n, nil
}

// nodeClient is the node's API client. Every pod's status changes go
// through it: the default rate limit would delay them by seconds on a busy
// node.
func nodeClient(cfg Config) (kubernetes.Interface, error) {
	restCfg := rest.CopyConfig(cfg.RESTConfig)
	restCfg.QPS, restCfg.Burst = 100, 200
	restCfg.UserAgent = "paddlejob-node/" + cfg.NodeName
	return kubernetes.NewForConfig(restCfg)
}

// openKubeletAPI opens the kubelet API port in New, so a port in use or a
// bad certificate fails the node before it registers.
func openKubeletAPI(cfg Config) (*kubeletServer, error) {
	cert, err := servingCertificate(cfg.TLSCertFile, cfg.TLSKeyFile, cfg.StateDir, cfg.NodeIP, cfg.NodeName, cfg.Clock.Now())
	if err != nil {
		return nil, err
	}
	tlsConfig, err := serverTLSConfig(cert, cfg.ClientCAFile)
	if err != nil {
		return nil, err
	}
	return listenKubelet(net.JoinHostPort(kubeletHost, strconv.Itoa(cfg.KubeletPort)), tlsConfig, cfg.Log)
}

// Ready is closed once the node is registered Ready and runs pods.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// NetworkNamespace is the node's network namespace, where its IP and the
// pods' gateway are, and where hostNetwork pods run; it routes the cluster
// IPs to the services namespace, where the node's listeners for pods (the
// Service proxy, the cluster DNS) are. It is valid until Run returns.
func (n *Node) NetworkNamespace() *podnetwork.Namespace { return n.network.Namespace() }

// kubeletHost is where the kubelet API listens: the host's loopback, out of
// the pods' reach. The Node names the node IP and this port; the API server
// reaches it there through the cluster network's egress, which leads that
// one address to the host (clusternetwork package).
const kubeletHost = "127.0.0.1"

// KubeletAddress is where the kubelet API listens, host:port, on the host.
func (n *Node) KubeletAddress() string {
	return net.JoinHostPort(kubeletHost, strconv.Itoa(int(n.server.port())))
}

// Run registers the node and runs its pods until ctx ends; it then stops
// every pod (SIGTERM, then SIGKILL after at most ShutdownGracePeriod),
// reports them Failed, and returns.
func (n *Node) Run(ctx context.Context) error {
	// Closed after everything below (defers run last first): the pods'
	// namespaces are released as they stop.
	defer n.releaseHost()
	log := n.log.WithValues("node", n.cfg.NodeName)
	if _, err := n.provider.deps.bwrapPath(); err != nil {
		log.Error(err, "Pods cannot start on this node until bubblewrap is installed")
	}
	// Pods are started afresh: leftovers of an earlier run are stale.
	if err := removeTree(n.provider.deps.podsDir); err != nil {
		return fmt.Errorf("cleaning the pods directory: %w", err)
	}

	// virtual-kubelet runs until the pods are stopped, so that their final
	// status reaches the API: it gets a context of its own.
	vkCtx, stopVK := context.WithCancel(vklog.WithLogger(context.Background(), newVKLogger(n.log)))
	defer stopVK()
	n.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: n.client.CoreV1().Events("")})
	defer n.events.Shutdown()
	n.podInformers.Start(vkCtx.Done())
	n.objInformers.Start(vkCtx.Done())
	stopNetwork, err := n.startNetworkServices(ctx) // after the pods (defers run last first)
	if err != nil {
		return err
	}
	defer stopNetwork()

	serveErr := make(chan error, 1)
	go func() {
		serveErr <- n.server.serve(kubeletHandler(n.provider, n.podInformers.Core().V1().Pods().Lister(), n.log))
	}()
	defer n.server.close()

	// The pods of an earlier run get their addresses back (noderestart.go),
	// held before the pod controller creates any pod.
	if err := n.holdPodIPs(ctx); err != nil {
		return fmt.Errorf("holding the addresses of the node's pods: %w", err)
	}
	n.startPods(vkCtx)
	nodesStarted := false
	defer func() {
		// Whatever ends Run, the pods stop first, while virtual-kubelet
		// still reports their status.
		n.stopPods(log)
		stopVK()
		<-n.pods.Done()
		if nodesStarted {
			<-n.nodes.Done()
		}
	}()
	if err := waitFor(ctx, n.pods.Ready(), n.pods.Done(), n.pods.Err); err != nil {
		return fmt.Errorf("starting the pod controller: %w", err)
	}
	go func() { _ = n.nodes.Run(vkCtx) }()
	nodesStarted = true
	if err := waitFor(ctx, n.nodes.Ready(), n.nodes.Done(), n.nodes.Err); err != nil {
		return fmt.Errorf("registering the node: %w", err)
	}
	ready := n.node.DeepCopy()
	setNodeReady(ready, metav1.NewTime(n.cfg.Clock.Now()))
	if err := n.nodeStatus.UpdateStatus(ctx, ready); err != nil {
		return fmt.Errorf("marking the node ready: %w", err)
	}
	if err := n.waitRegisteredReady(ctx); err != nil {
		return fmt.Errorf("marking the node ready: %w", err)
	}
	close(n.ready)
	log.Info("Node ready", "kubeletAPI", n.KubeletAddress(), "podCIDR", n.cfg.PodCIDR, "nodeIP", n.cfg.NodeIP)

	select {
	case <-ctx.Done():
		return nil
	case <-n.pods.Done():
		return fmt.Errorf("pod controller stopped: %w", n.pods.Err())
	case <-n.nodes.Done():
		return fmt.Errorf("node controller stopped: %w", n.nodes.Err())
	case err := <-serveErr:
		return fmt.Errorf("kubelet API: %w", err)
	}
}

// startPods starts the pod controller and the eviction of pods past their
// storage limits (eviction.go), until ctx ends.
func (n *Node) startPods(ctx context.Context) {
	go func() { _ = n.pods.Run(ctx, podSyncWorkers) }()
	go n.provider.enforceStorageLimits(ctx)
}

// stopPods stops every pod, SIGKILLing what is left after the shutdown grace
// period, and gives virtual-kubelet a moment to report them.
func (n *Node) stopPods(log logr.Logger) {
	log.Info("Stopping every pod", "gracePeriod", n.cfg.ShutdownGracePeriod)
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownGracePeriod+5*time.Second)
	defer cancel()
	n.provider.shutdown(ctx, n.cfg.ShutdownGracePeriod)
	n.waitForFinalStatuses(ctx)
	log.Info("Node stopped")
}

// waitRegisteredReady waits until the API shows the node Ready, which the
// node controller writes asynchronously.
func (n *Node) waitRegisteredReady(ctx context.Context) error {
	return wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		node, err := n.client.CoreV1().Nodes().Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
}

// waitFor waits until ready closes, or returns why it will not.
func waitFor(ctx context.Context, ready, done <-chan struct{}, errOf func() error) error {
	select {
	case <-ready:
		return nil
	case <-done:
		if err := errOf(); err != nil {
			return err
		}
		return errors.New("stopped before it was ready")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitForFinalStatuses gives virtual-kubelet a moment to write the stopped
// pods' statuses, so the API does not show them running on a stopped node.
func (n *Node) waitForFinalStatuses(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	lister := n.podInformers.Core().V1().Pods().Lister()
	_ = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, r := range n.provider.allRuntimes() {
			pod, err := lister.Pods(r.namespace).Get(r.name)
			if err != nil || pod.UID != r.uid {
				continue
			}
			if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
				return false, nil
			}
		}
		return true, nil
	})
}

// releaseHost unmounts the pods' staging and closes their network, once
// every pod has stopped.
func (n *Node) releaseHost() {
	if n.hostIDs != nil {
		n.hostIDs.stager.close()
	}
	n.network.Close()
}
