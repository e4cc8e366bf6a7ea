package node

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	vknode "github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
	"github.com/paddlejob/paddlejob/internal/localcluster/serviceproxy"
)

// What New does besides wiring: checking the configuration, and the
// virtual-kubelet controllers that carry the pods' and the Node's status.

// nodeInputs is what checkConfig read from the configuration.
type nodeInputs struct {
	images       *ImageTable
	ipRange      ipRange
	capacity     corev1.ResourceList
	serviceCIDRs serviceproxy.CIDRs
	// network is the pod network's addressing.
	network podnetwork.NodeConfig
}

// checkConfig fills in cfg's defaults, checks it and reads what it names:
// the image table, the pod IP range, the capacity, the Service CIDRs.
func checkConfig(cfg Config) (Config, nodeInputs, error) {
	cfg = withDefaults(cfg)
	if cfg.RESTConfig == nil {
		return cfg, nodeInputs{}, errors.New("node: no API server configuration")
	}
	if cfg.StateDir == "" {
		return cfg, nodeInputs{}, errors.New("node: a state directory is required")
	}
	nodeIP, err := netip.ParseAddr(cfg.NodeIP)
	if err != nil || !nodeIP.Is4() || nodeIP.IsLoopback() || nodeIP.IsUnspecified() {
		return cfg, nodeInputs{}, fmt.Errorf("node IP %q: want an IPv4 address that is not loopback (it is on a link of the node's network namespace), such as %s", cfg.NodeIP, DefaultNodeIP)
	}
	stateDir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return cfg, nodeInputs{}, err
	}
	cfg.StateDir = stateDir
	for _, paths := range []*[]string{&cfg.HostPathRO, &cfg.HostPathRW, &cfg.HiddenFiles} {
		if *paths, err = absolutePaths(*paths); err != nil {
			return cfg, nodeInputs{}, err
		}
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return cfg, nodeInputs{}, fmt.Errorf("creating the state directory: %w", err)
	}
	images, err := LoadImageTable(cfg.ImageTableFile)
	if err != nil {
		return cfg, nodeInputs{}, err
	}
	for _, w := range images.Warnings() {
		cfg.Log.Info("Warning: "+w, "imageTable", cfg.ImageTableFile)
	}
	podCIDR, ipRange, err := parsePodCIDR(cfg.PodCIDR)
	if err != nil {
		return cfg, nodeInputs{}, err
	}
	if usable := ipRange.usable(); usable == 0 {
		return cfg, nodeInputs{}, fmt.Errorf("pod CIDR %s holds no address pods can have: pods get only addresses whose last octet is %d-%d", podCIDR, minLastOctet, maxLastOctet)
	}
	capacity, err := nodeCapacity(cfg.MaxPods, stateDir, cfg.Capacity)
	if err != nil {
		return cfg, nodeInputs{}, err
	}
	if err := ValidateNodeLabels(cfg.NodeLabels); err != nil {
		return cfg, nodeInputs{}, err
	}
	if cfg.Bwrap != "" {
		if _, err := findBwrap(cfg.Bwrap); err != nil {
			return cfg, nodeInputs{}, err
		}
	}
	network, err := networkConfig(cfg, nodeIP, podCIDR)
	if err != nil {
		return cfg, nodeInputs{}, err
	}
	if cfg.PodAPIServer == "" {
		cfg.PodAPIServer = cfg.RESTConfig.Host
	}
	if err := checkClusterDNSIP(cfg.ClusterDNS, network.ServiceCIDRs); err != nil {
		return cfg, nodeInputs{}, err
	}
	return cfg, nodeInputs{images: images, ipRange: ipRange, capacity: capacity,
		serviceCIDRs: serviceproxy.CIDRs(network.ServiceCIDRs), network: network}, nil
}

// newControllers makes the controllers that sync the pods with the
// provider and register the Node and its lease.
func (n *Node) newControllers(client kubernetes.Interface, recorder record.EventRecorder, capacity corev1.ResourceList,
	podInformer corev1informers.PodInformer, cmInformer corev1informers.ConfigMapInformer,
	secretInformer corev1informers.SecretInformer, serviceInformer corev1informers.ServiceInformer) error {
	// Status updates are the node's main output and must reach the API
	// promptly: per-pod backoff only, no overall rate limit.
	limiter := func() workqueue.TypedRateLimiter[any] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[any](5*time.Millisecond, 10*time.Second)
	}
	var err error
	n.pods, err = vknode.NewPodController(vknode.PodControllerConfig{
		PodClient:                            client.CoreV1(),
		PodInformer:                          podInformer,
		EventRecorder:                        recorder,
		Provider:                             n.provider,
		ConfigMapInformer:                    cmInformer,
		SecretInformer:                       secretInformer,
		ServiceInformer:                      serviceInformer,
		SyncPodsFromKubernetesRateLimiter:    limiter(),
		DeletePodsFromKubernetesRateLimiter:  limiter(),
		SyncPodStatusFromProviderRateLimiter: limiter(),
		// The provider resolves env itself, at container start: it knows the
		// pod's IP, and a missing ConfigMap keeps only that container waiting.
		SkipDownwardAPIResolution: true,
	})
	if err != nil {
		return fmt.Errorf("creating the pod controller: %w", err)
	}

	n.node = nodeObject(n.cfg.NodeName, n.cfg.NodeIP, n.server.port(), capacity, hostSystemInfo())
	// The node's share of the cluster's pod network, as a node IPAM
	// controller would record it.
	n.node.Spec.PodCIDR, n.node.Spec.PodCIDRs = n.cfg.PodCIDR, []string{n.cfg.PodCIDR}
	for k, v := range n.cfg.NodeLabels {
		n.node.Labels[k] = v
	}
	if ids := n.provider.deps.sandbox.hostIDs; ids != nil {
		n.node.Annotations = map[string]string{PodHostIDsAnnotation: ids.Range.String()}
	}
	n.nodeStatus = vknode.NewNaiveNodeProvider()
	nodes := client.CoreV1().Nodes()
	n.nodes, err = vknode.NewNodeController(n.nodeStatus, n.node.DeepCopy(), nodes,
		vknode.WithNodeEnableLeaseV1(client.CoordinationV1().Leases(corev1.NamespaceNodeLease), 0),
		vknode.WithNodeStatusUpdateErrorHandler(func(ctx context.Context, err error) error {
			if !apierrors.IsNotFound(err) {
				return err
			}
			// Someone deleted the Node: register it again.
			_, err = nodes.Create(ctx, n.node.DeepCopy(), metav1.CreateOptions{})
			return err
		}))
	if err != nil {
		return fmt.Errorf("creating the node controller: %w", err)
	}
	return nil
}

// namespaceChangeHandler calls changed with the namespace of every object
// added, changed or deleted.
func namespaceChangeHandler(changed func(namespace string)) cache.ResourceEventHandler {
	ns := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if m, ok := obj.(metav1.Object); ok {
			changed(m.GetNamespace())
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    ns,
		UpdateFunc: func(_, obj any) { ns(obj) },
		DeleteFunc: ns,
	}
}

func withDefaults(cfg Config) Config {
	if cfg.NodeName == "" {
		cfg.NodeName = DefaultNodeName
	}
	if cfg.NodeIP == "" {
		cfg.NodeIP = DefaultNodeIP
	}
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = DefaultPodCIDR
	}
	if cfg.ClusterPodCIDR == "" {
		cfg.ClusterPodCIDR = cfg.PodCIDR
	}
	if cfg.NodesCIDR == "" {
		cfg.NodesCIDR = DefaultNodesCIDR
	}
	if cfg.MaxPods == 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	if cfg.PodPidsLimit == 0 {
		cfg.PodPidsLimit = DefaultPodPidsLimit
	}
	if cfg.PodMemoryLimit == 0 {
		cfg.PodMemoryLimit = defaultPodMemoryLimit()
	}
	if cfg.TmpSize == 0 {
		cfg.TmpSize = DefaultTmpSize
	}
	if cfg.ShmSize == 0 {
		cfg.ShmSize = DefaultShmSize
	}
	if cfg.ShutdownGracePeriod == 0 {
		cfg.ShutdownGracePeriod = DefaultShutdownGracePeriod
	}
	if cfg.ServiceCIDR == "" {
		cfg.ServiceCIDR = DefaultServiceCIDR
	}
	if cfg.Log.GetSink() == nil {
		cfg.Log = logr.Discard()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return cfg
}

// networkConfig is the node's network as cfg gives it: its IP and pod CIDR
// (already read), the nodes' and the cluster's pod networks, the Service
// CIDRs.
func networkConfig(cfg Config, nodeIP netip.Addr, podCIDR netip.Prefix) (podnetwork.NodeConfig, error) {
	servicePrefixes, err := podnetwork.ParseCIDRs(cfg.ServiceCIDR)
	if err == nil && len(servicePrefixes) == 0 {
		err = fmt.Errorf("%q names no range, such as %s", cfg.ServiceCIDR, DefaultServiceCIDR)
	}
	if err != nil {
		return podnetwork.NodeConfig{}, fmt.Errorf("service CIDR: %w", err)
	}
	nodesCIDR, err := netip.ParsePrefix(cfg.NodesCIDR)
	if err != nil {
		return podnetwork.NodeConfig{}, fmt.Errorf("nodes' CIDR %q: want an IPv4 network such as %s", cfg.NodesCIDR, DefaultNodesCIDR)
	}
	clusterPodCIDR, err := netip.ParsePrefix(cfg.ClusterPodCIDR)
	if err != nil {
		return podnetwork.NodeConfig{}, fmt.Errorf("cluster pod CIDR %q: want an IPv4 network holding the pod CIDR, such as %s", cfg.ClusterPodCIDR, DefaultPodCIDR)
	}
	network := podnetwork.NodeConfig{PodCIDR: podCIDR, ClusterPodCIDR: clusterPodCIDR.Masked(), NodeIP: nodeIP, NodesCIDR: nodesCIDR.Masked(), ServiceCIDRs: servicePrefixes}
	return network, network.Check()
}

// absolutePaths are paths made absolute, the empty ones left out (a flag
// given as --host-path-rw= lists none).
func absolutePaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		out = append(out, abs)
	}
	return out, nil
}
