package node

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/paddlejob/paddlejob/internal/fsutil"
	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
)

// standardPath is the PATH of containers when the node has none.
const standardPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Provider runs the pods bound to the node as sandboxed processes. It is the
// virtual-kubelet provider: virtual-kubelet's pod controller calls it when
// pods are bound, changed and deleted, and it reports their status back
// through NotifyPods.
type Provider struct {
	log    logr.Logger
	clock  clock.Clock
	client kubernetes.Interface
	pods   corev1listers.PodLister
	// ipam gives pods their IPs; they are released through deps.
	ipam *ipAllocator
	// deps is what the pods' runtimes use of the node.
	deps podDeps
	// spawner starts the pods' sandboxes and the node's own processes.
	spawner *spawner

	mu       sync.Mutex
	runtimes map[string]*podRuntime
	notify   func(*corev1.Pod)
}

// providerConfig is what a Provider is built from.
type providerConfig struct {
	Log         logr.Logger
	Clock       clock.Clock
	Client      kubernetes.Interface
	Pods        corev1listers.PodLister
	ConfigMaps  corev1listers.ConfigMapLister
	Secrets     corev1listers.SecretLister
	Recorder    record.EventRecorder
	Images      *ImageTable
	IPs         *ipAllocator
	Allocatable corev1.ResourceList
	StateDir    string
	// HiddenPaths are host directories no pod may see, besides StateDir.
	HiddenPaths []string
	// HiddenFiles are host files no pod may mount, nor a directory holding
	// one.
	HiddenFiles []string
	// HostPathRO and HostPathRW are the host directories whose paths pods
	// may mount read-only and read-write; other host paths are refused
	// (hostPathRules).
	HostPathRO []string
	HostPathRW []string
	// ClusterDNS is the cluster DNS server's address, "" for none.
	ClusterDNS string
	NodeIP     string
	// Network is the node's network: pods get namespaces on its bridge,
	// hostNetwork pods run in its namespace, and the node's dials to pods
	// are made there.
	Network *podnetwork.NodeNetwork
	Bwrap   string
	// APIServer is the API server's URL, given to containers as
	// KUBERNETES_SERVICE_HOST and _PORT.
	APIServer string
	// Sandbox are every sandbox's limits and sizes.
	Sandbox sandboxSettings
}

func newProvider(cfg providerConfig) *Provider {
	hostname, _ := os.Hostname()
	path := os.Getenv("PATH")
	if path == "" {
		path = standardPath
	}
	tokens := newTokenIssuer(cfg.Client, cfg.Clock)
	p := &Provider{
		log:      cfg.Log,
		clock:    cfg.Clock,
		client:   cfg.Client,
		pods:     cfg.Pods,
		ipam:     cfg.IPs,
		runtimes: map[string]*podRuntime{},
		notify:   func(*corev1.Pod) {},
		spawner:  newSpawner(cfg.Network.Namespace()),
	}
	hostPaths := hostPathRules{Hidden: append([]string{cfg.StateDir}, cfg.HiddenPaths...), HiddenFiles: cfg.HiddenFiles,
		Readable: cfg.HostPathRO, Writable: cfg.HostPathRW, Contexts: cfg.Images.BuildContexts(), Outputs: cfg.Images.BuildContextOutputs()}
	p.deps = podDeps{
		log:       cfg.Log,
		clock:     cfg.Clock,
		recorder:  cfg.Recorder,
		processes: p.spawner,
		network:   nodePodNetworks{cfg.Network},
		dial:      cfg.Network.Namespace().DialContext,
		images:    newImageSource(cfg.Images, installPaddleRuntime(cfg.Log.WithName("paddle-runtime")), cfg.Clock),
		objects:   listerObjects{configMaps: cfg.ConfigMaps, secrets: cfg.Secrets, tokens: tokens},
		setUpVolume: func(ctx context.Context, namespace, podDir string, v *corev1.Volume) (podVolume, error) {
			pv, err := setUpHostVolume(ctx, cfg.Client, hostPaths, namespace, podDir, v)
			if err == nil && cfg.Sandbox.asRoot && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
				err = mountMemoryVolume(pv.HostPath, memoryVolumeSize(v.EmptyDir, cfg.Sandbox.limits.MemoryBytes))
			}
			return pv, err
		},
		release: func(uid types.UID) {
			tokens.forget(uid)
			cfg.IPs.release(string(uid))
		},
		apiPod: p.apiPod,
		notify: p.notifyPod,
		// Looked up when a container starts, unless configured, so that
		// installing bubblewrap fixes a running node.
		bwrapPath:    func() (string, error) { return findBwrap(cfg.Bwrap) },
		podsDir:      filepath.Join(cfg.StateDir, "pods"),
		nodeIP:       cfg.NodeIP,
		clusterDNS:   cfg.ClusterDNS,
		hostname:     hostname,
		defaultPath:  path,
		apiServerEnv: apiServerEnv(cfg.APIServer),
		allocatable:  cfg.Allocatable,
		hostFS:       os.DirFS("/"),
		hidden:       hostPaths.Hidden,
		hostPaths:    hostPaths,
		// One parent group per node, named after its state directory.
		cgroups: detectCgroups(cgroupsRoot, readSelfCgroup(), fmt.Sprintf("%x", sha256.Sum256([]byte(cfg.StateDir)))[:12], cfg.Sandbox.node),
		sandbox: cfg.Sandbox,
	}
	return p
}

// listerObjects reads ConfigMaps and Secrets from informer caches and
// issues service-account tokens.
type listerObjects struct {
	configMaps corev1listers.ConfigMapLister
	secrets    corev1listers.SecretLister
	tokens     *tokenIssuer
}

func (l listerObjects) ServiceAccountToken(pod *corev1.Pod, audience string, exp *int64) (string, error) {
	return l.tokens.token(pod, audience, exp)
}

func (l listerObjects) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	return l.configMaps.ConfigMaps(ns).Get(name)
}

func (l listerObjects) Secret(ns, name string) (*corev1.Secret, error) {
	return l.secrets.Secrets(ns).Get(name)
}

// CreatePod starts a pod bound to the node. A pod whose status shows it
// started, though the node does not run it, ran before the node restarted:
// it is reported Failed, not run again (noderestart.go).
func (p *Provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	key := podKey(pod.Namespace, pod.Name)
	p.mu.Lock()
	old := p.runtimes[key]
	if old != nil && old.uid == pod.UID {
		p.mu.Unlock()
		old.update(pod)
		return nil
	}
	if fateAfterRestart(pod) == fateFail {
		p.mu.Unlock()
		p.failRestartedPod(pod)
		return nil
	}
	ip := p.deps.nodeIP
	if !pod.Spec.HostNetwork {
		var err error
		if ip, err = p.ipam.allocate(string(pod.UID), pod.Status.PodIP); err != nil {
			p.mu.Unlock()
			return fmt.Errorf("pod %s: %w", key, err)
		}
	}
	r := newPodRuntime(&p.deps, pod, ip, old)
	p.runtimes[key] = r
	p.mu.Unlock()

	if old != nil {
		// A pod of the same name replaced it in the API: the old one is gone.
		p.deleteRuntime(old, gracePeriod(old.podCopy()))
	}
	p.log.V(1).Info("Starting pod", "pod", key, "ip", ip)
	r.publish()
	go r.run()
	return nil
}

// UpdatePod takes a pod's new metadata.
func (p *Provider) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	r := p.runtime(podKey(pod.Namespace, pod.Name))
	if r == nil || r.uid != pod.UID {
		return p.CreatePod(ctx, pod)
	}
	r.update(pod)
	return nil
}

// DeletePod stops a pod within its grace period; once its processes are gone
// the pod is deleted from the API and its files removed. It returns at once
// and may be called again, to shorten the grace period.
func (p *Provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	r := p.runtime(podKey(pod.Namespace, pod.Name))
	if r == nil || (pod.UID != "" && r.uid != pod.UID) {
		return errdefs.NotFoundf("pod %s/%s is not on this node", pod.Namespace, pod.Name)
	}
	p.deleteRuntime(r, gracePeriod(pod))
	return nil
}

func (p *Provider) deleteRuntime(r *podRuntime, grace time.Duration) {
	if r.markDeleting() {
		go p.reap(r)
	}
	r.stop(grace, false)
}

// reap finishes a deleted pod once its processes are gone. The kubelet
// deletes a pod from the API as soon as its containers have stopped, where
// virtual-kubelet's pod controller waits out the whole grace period: the node
// deletes it itself, so a replacement can start without that wait.
func (p *Provider) reap(r *podRuntime) {
	<-r.done
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := p.client.CoreV1().Pods(r.namespace).Delete(ctx, r.name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      metav1.NewUIDPreconditions(string(r.uid)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		p.log.Error(err, "Cannot delete stopped pod", "pod", r.key)
	}
	p.mu.Lock()
	if p.runtimes[r.key] == r {
		delete(p.runtimes, r.key)
	}
	p.mu.Unlock()
	if err := removeTree(r.dir); err != nil {
		p.log.Error(err, "Cannot remove pod directory", "pod", r.key)
	}
	p.log.V(1).Info("Pod deleted", "pod", r.key)
}

// GetPod returns a pod the node runs. A pod whose name now belongs to a new
// pod in the API is not returned, so the new one gets created.
func (p *Provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	r := p.runtime(podKey(namespace, name))
	if r == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, name)
	}
	if api, err := p.pods.Pods(namespace).Get(name); err == nil && api.UID != r.uid {
		return nil, errdefs.NotFoundf("pod %s/%s was replaced", namespace, name)
	}
	return r.snapshot(), nil
}

// GetPodStatus returns the status of a pod the node runs.
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods returns every pod the node runs.
func (p *Provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	for _, r := range p.allRuntimes() {
		pods = append(pods, r.snapshot())
	}
	return pods, nil
}

// NotifyPods registers virtual-kubelet's status callback.
func (p *Provider) NotifyPods(_ context.Context, notify func(*corev1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = notify
}

func (p *Provider) notifyPod(pod *corev1.Pod) {
	p.mu.Lock()
	notify := p.notify
	p.mu.Unlock()
	notify(pod)
}

// GetContainerLogs streams a container's log for the kubelet API.
func (p *Provider) GetContainerLogs(ctx context.Context, namespace, podName, containerName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	r := p.runtime(podKey(namespace, podName))
	if r == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, podName)
	}
	path, live, err := r.logFor(containerName, opts.Previous)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, errdefs.NotFoundf("log of container %q in pod %s/%s: %v", containerName, namespace, podName, err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(copyLog(ctx, path, live, opts, p.clock.Now(), pw))
	}()
	return pr, nil
}

// podDeleted frees the address held for a pod after a node restart that
// never claimed it: a pod deleted before the node ran it again.
func (p *Provider) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		p.ipam.releaseHeld(string(pod.UID))
	}
}

// objectsChanged wakes the pods of a namespace after a ConfigMap or Secret
// changed there: their projections are refreshed and waiting containers
// retried.
func (p *Provider) objectsChanged(namespace string) {
	for _, r := range p.allRuntimes() {
		if r.namespace == namespace {
			r.changed.notify()
		}
	}
}

// apiPod is the pod the cache holds, nil when it has no such pod. Callers
// must not modify it.
func (p *Provider) apiPod(namespace, name string, uid types.UID) *corev1.Pod {
	pod, err := p.pods.Pods(namespace).Get(name)
	if err != nil || pod.UID != uid {
		return nil
	}
	return pod
}

// shutdown stops every pod, giving each at most grace, and waits until their
// processes are gone or ctx ends.
func (p *Provider) shutdown(ctx context.Context, grace time.Duration) {
	runtimes := p.allRuntimes()
	for _, r := range runtimes {
		r.stop(min(grace, gracePeriod(r.podCopy())), true)
	}
	for _, r := range runtimes {
		select {
		case <-r.done:
		case <-ctx.Done():
			return
		}
	}
	// Every container's group is gone with it: the node's own goes too, or
	// each node start would leave one behind on the host.
	p.deps.cgroups.remove()
	// The pods' directories stay (their logs) until the next start, without
	// their memory-backed volumes: no mount is left under the state
	// directory to keep it from being removed.
	fsutil.UnmountUnder(p.deps.podsDir)
}

func (p *Provider) runtime(key string) *podRuntime {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runtimes[key]
}

func (p *Provider) allRuntimes() []*podRuntime {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*podRuntime, 0, len(p.runtimes))
	for _, r := range p.runtimes {
		out = append(out, r)
	}
	return out
}

// readSelfCgroup is /proc/self/cgroup, or nothing where it cannot be read
// (detectCgroups then says so).
func readSelfCgroup() []byte {
	data, _ := os.ReadFile("/proc/self/cgroup")
	return data
}
