package node

// A podRuntime runs one pod through its life; containers.go, assemble.go and
// prepare.go hold its parts.

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/paddlejob/paddlejob/internal/fsutil"
	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
	"github.com/paddlejob/paddlejob/internal/sidecar"
)

// podDeps is what a podRuntime uses of its node: the Provider builds it
// once, and the container loop's tests build it around a fake clock and
// process starter. Nothing here reaches back into the Provider.
type podDeps struct {
	log      logr.Logger
	clock    clock.Clock
	recorder record.EventRecorder
	// processes starts the containers' sandboxes.
	processes processStarter
	// images is the image table, which installing a Paddle runtime a
	// container needs replaces (paddlepull.go).
	images *imageSource
	// objects reads ConfigMaps and Secrets and issues service-account
	// tokens, for env and projection volumes.
	objects objectSource
	// setUpVolume sets up a volume that is not a projection (emptyDir,
	// hostPath, a claim's) under the pod's directory.
	setUpVolume func(ctx context.Context, namespace, podDir string, v *corev1.Volume) (podVolume, error)
	// release frees what the node holds for a pod once none of its
	// containers will run again: its IP and its tokens.
	release func(uid types.UID)
	// apiPod is the pod as the node's cache of the API holds it, nil when it
	// has no such pod (it was deleted or replaced).
	apiPod func(namespace, name string, uid types.UID) *corev1.Pod
	// notify sends a pod's status to virtual-kubelet.
	notify func(*corev1.Pod)
	// bwrapPath is the bubblewrap to start containers with.
	bwrapPath func() (string, error)
	// network gives pods their network namespaces; nil runs them in the
	// node's own (the container loop's tests, whose processes are fakes).
	network podNetworks
	// dial connects the node to a pod (probes), from the node's network
	// namespace.
	dial func(ctx context.Context, network, address string) (net.Conn, error)

	// Facts of the node.
	podsDir string
	nodeIP  string
	// clusterDNS is the cluster DNS server's address pods resolve names
	// with, "" when the node runs none.
	clusterDNS   string
	hostname     string
	defaultPath  string
	apiServerEnv []corev1.EnvVar
	allocatable  corev1.ResourceList
	hostFS       fs.FS
	// hidden are the host directories no sandbox may see (sandboxSpec.Hidden).
	hidden []string
	// hostPaths decide which host paths pods may mount and write.
	hostPaths hostPathRules
	// cgroups is where every container run gets its group.
	cgroups *cgroupParent
	// sandbox are the node's settings of every sandbox.
	sandbox sandboxSettings
}

// podRuntime runs one pod: its sandbox files and volumes, then its init
// containers in order, then its containers, until none will run again.
type podRuntime struct {
	deps      *podDeps
	key       string
	name      string
	namespace string
	uid       types.UID
	dir       string
	ip        string
	hostname  string
	start     metav1.Time

	// ctx ends when the pod is stopped or has completed; done closes once
	// its processes are gone and its resources released.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// predecessor is the pod of the same name this one replaces; it must be
	// gone before this one starts.
	predecessor *podRuntime

	// changed fires when the pod's metadata or an object of its namespace
	// changes: projections are refreshed, waiting containers retried.
	changed broadcaster
	// graceChanged fires when a stop shortens the grace period.
	graceChanged broadcaster
	// volumesMu serializes writing the pod's volume files, and guards
	// projections: the digest of each projection volume's files.
	volumesMu   sync.Mutex
	projections map[string][32]byte

	// publishMu keeps publish's statuses in order.
	publishMu sync.Mutex
	// mu guards the fields below.
	mu           sync.Mutex
	pod          *corev1.Pod
	initRuns     []*containerRun
	runs         []*containerRun
	volumes      map[string]podVolume
	sandboxReady bool
	stopping     bool
	// killAt is when the containers being stopped get SIGKILL: set by stop,
	// or when the sidecars stop after the containers ended (stopSidecars);
	// zero until then.
	killAt   time.Time
	shutdown bool
	// evicted is why the node evicted the pod (eviction.go), "" unless it
	// did.
	evicted  string
	deleting bool
	finished bool
	// lastPodWarning avoids repeating a pod event, as lastWarning does.
	lastPodWarning string

	// netns is the network namespace the pod's containers run in, set by
	// prepare; podNet is the pod's own, released by finish (nil for a
	// hostNetwork pod, which runs in the node's). Only the pod's goroutine
	// writes them, before any container starts.
	netns  *podnetwork.Namespace
	podNet podNetwork
}

func newPodRuntime(deps *podDeps, pod *corev1.Pod, ip string, predecessor *podRuntime) *podRuntime {
	pod = pod.DeepCopy()
	r := &podRuntime{
		deps:        deps,
		key:         podKey(pod.Namespace, pod.Name),
		name:        pod.Name,
		namespace:   pod.Namespace,
		uid:         pod.UID,
		dir:         filepath.Join(deps.podsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		ip:          ip,
		hostname:    podHostname(pod, deps.hostname),
		start:       metav1.NewTime(deps.clock.Now()),
		done:        make(chan struct{}),
		predecessor: predecessor,
		pod:         pod,
	}
	if pod.Status.StartTime != nil {
		r.start = *pod.Status.StartTime
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	firstReason := reasonContainerCreating
	if len(pod.Spec.InitContainers) > 0 {
		firstReason = reasonPodInitializing
	}
	for i := range pod.Spec.InitContainers {
		c := &containerRun{spec: &pod.Spec.InitContainers[i], kind: kindInit, state: waiting(firstReason, "")}
		if sidecar.Is(c.spec) {
			c.kind, c.firstStart = kindSidecar, make(chan struct{})
		}
		r.initRuns = append(r.initRuns, c)
	}
	for i := range pod.Spec.Containers {
		r.runs = append(r.runs, &containerRun{spec: &pod.Spec.Containers[i],
			state: waiting(firstReason, "")})
	}
	return r
}

func podKey(namespace, name string) string { return namespace + "/" + name }

// podHostname is the pod's hostname as the kubelet sets it: spec.hostname or
// the pod name cut to 63 characters; hostNetwork pods have the node's.
func podHostname(pod *corev1.Pod, nodeHostname string) string {
	if pod.Spec.HostNetwork {
		return nodeHostname
	}
	return dnsHostname(pod)
}

// dnsHostname is the pod's name under its subdomain, as a headless Service
// names it in DNS: spec.hostname or the pod name cut to 63 characters, for
// hostNetwork pods too (at the node's IP).
func dnsHostname(pod *corev1.Pod) string {
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = h[:63]
	}
	return h
}

// run is the pod's goroutine.
func (r *podRuntime) run() {
	defer close(r.done)
	if r.predecessor != nil {
		<-r.predecessor.done
	}
	r.execute(r.ctx)
	// A finished pod's memory-backed volumes give their memory back, as a
	// kubelet tears down a terminated pod's volumes (memoryvolume.go).
	fsutil.UnmountUnder(filepath.Join(r.dir, "volumes"))
	// Ends the helpers (projection refreshes) of a pod that completed.
	r.cancel()
	r.finish()
}

// execute runs the pod's init containers in order (sidecars.go), then its
// containers all at once until none will run again; the sidecars stop last.
func (r *podRuntime) execute(ctx context.Context) {
	if !r.retry(ctx, r.prepare) {
		return
	}
	go r.refreshProjectionsLoop(ctx)
	initialized, sidecars := r.initialize(ctx)
	if initialized {
		var wg sync.WaitGroup
		for _, c := range r.runs {
			wg.Go(func() { r.runContainer(ctx, c) })
		}
		wg.Wait()
	}
	r.stopSidecars(sidecars)
}

// retry runs step until it succeeds; false if the pod was stopped first.
func (r *podRuntime) retry(ctx context.Context, step func(context.Context) error) bool {
	for {
		changed := r.changed.changed()
		err := step(ctx)
		if err == nil {
			return true
		}
		r.deps.log.V(1).Info("Pod not ready to start", "pod", r.key, "err", err.Error())
		select {
		case <-changed:
		case <-r.deps.clock.After(retryInterval):
		case <-ctx.Done():
			return false
		}
	}
}

// finish releases what the pod held once no container will run again.
func (r *podRuntime) finish() {
	r.mu.Lock()
	r.finished = true
	r.sandboxReady = false
	r.mu.Unlock()
	r.releaseNetwork()
	r.deps.release(r.uid)
	r.publish()
}

// stop ends the pod's containers within grace; a later stop can only shorten
// it. shutdown marks a stop for the node's shutdown.
func (r *podRuntime) stop(grace time.Duration, shutdown bool) {
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return
	}
	killAt := r.deps.clock.Now().Add(grace)
	if r.killAt.IsZero() || killAt.Before(r.killAt) {
		r.killAt = killAt
	}
	r.stopping = true
	r.shutdown = r.shutdown || shutdown
	r.mu.Unlock()
	r.graceChanged.notify()
	r.cancel()
}

func (r *podRuntime) isStopping() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopping
}

// markDeleting records that the pod is being deleted; it reports whether
// this is the first time.
func (r *podRuntime) markDeleting() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := !r.deleting
	r.deleting = true
	return first
}

// update takes new pod metadata (labels and annotations feed projections).
func (r *podRuntime) update(pod *corev1.Pod) {
	r.mu.Lock()
	spec := r.pod.Spec
	r.pod = pod.DeepCopy()
	// The running containers keep the spec they started with.
	r.pod.Spec = spec
	r.mu.Unlock()
	r.changed.notify()
	r.publish()
}

func (r *podRuntime) podCopy() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pod.DeepCopy()
}

func (r *podRuntime) restartPolicy() corev1.RestartPolicy {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pod.Spec.RestartPolicy
}

func (r *podRuntime) setState(c *containerRun, s corev1.ContainerState) {
	r.mu.Lock()
	c.state = s
	r.mu.Unlock()
	r.publish()
}

func (r *podRuntime) allRuns() []*containerRun {
	return append(append([]*containerRun(nil), r.initRuns...), r.runs...)
}

// publish sends the pod's current status to virtual-kubelet, unless the pod
// is gone from the API. Publishes go out one at a time, in the order their
// statuses were taken: virtual-kubelet keeps the last it is given, so a
// status taken earlier must not overtake a later one (the pod's containers
// publish from goroutines of their own).
func (r *podRuntime) publish() {
	r.publishMu.Lock()
	defer r.publishMu.Unlock()
	current := r.deps.apiPod(r.namespace, r.name, r.uid)
	if current == nil {
		return
	}
	pod := r.snapshotOver(&current.Status)
	// virtual-kubelet writes the whole pod it is given to pods/status, which
	// takes annotations: the runtime's older copy would erase what others
	// added since (the operator's endpoints annotation, which a pod's init
	// container waits for again when a restarted node runs it afresh). The
	// runtime's copy stays what GetPod returns: virtual-kubelet compares it
	// with the API's to pass on metadata changes.
	pod.ObjectMeta = *current.ObjectMeta.DeepCopy()
	r.deps.notify(pod)
}

// snapshot is the pod with the status the node reports.
func (r *podRuntime) snapshot() *corev1.Pod {
	var base *corev1.PodStatus
	if current := r.deps.apiPod(r.namespace, r.name, r.uid); current != nil {
		base = &current.Status
	}
	return r.snapshotOver(base)
}

// snapshotOver computes the status over base, the status the API holds (nil
// when unknown).
func (r *podRuntime) snapshotOver(base *corev1.PodStatus) *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	pod := r.pod.DeepCopy()
	if base == nil {
		base = &pod.Status
	}
	base = base.DeepCopy()
	in := statusInput{
		Spec:         &pod.Spec,
		Base:         *base,
		PodIPs:       []string{r.ip},
		HostIPs:      []string{r.deps.nodeIP},
		StartTime:    &r.start,
		SandboxReady: r.sandboxReady,
		Terminal:     r.finished && r.stopping,
		Shutdown:     r.shutdown,
		Evicted:      r.evicted,
		Now:          metav1.NewTime(r.deps.clock.Now()),
	}
	for _, c := range r.initRuns {
		in.InitStatuses = append(in.InitStatuses, c.status(r.uid))
	}
	for _, c := range r.runs {
		in.Statuses = append(in.Statuses, c.status(r.uid))
	}
	pod.Status = buildPodStatus(in)
	return pod
}

// warnOnce records a warning event unless the same one was the last for c
// (nil: the pod).
func (r *podRuntime) warnOnce(c *containerRun, reason, message string) {
	r.mu.Lock()
	key := reason + ": " + message
	last := &r.lastPodWarning
	if c != nil {
		last = &c.lastWarning
	}
	repeated := *last == key
	*last = key
	r.mu.Unlock()
	if !repeated {
		r.event(corev1.EventTypeWarning, reason, message)
	}
}

func (r *podRuntime) event(eventType, reason, message string) {
	r.deps.recorder.Event(r.podCopy(), eventType, reason, message)
}

// logFor returns the log file of a container's latest run (or the one before
// with previous) and, while that run goes on, its live log.
func (r *podRuntime) logFor(container string, previous bool) (string, *containerLog, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.allRuns() {
		if c.spec.Name != container {
			continue
		}
		switch {
		case previous && c.runs < 2:
			return "", nil, errdefs.InvalidInputf("previous terminated container %q in pod %q not found", container, r.name)
		case previous:
			return r.logPath(container, c.runs-2), nil, nil
		case c.runs == 0:
			reason := reasonContainerCreating
			if c.state.Waiting != nil {
				reason = c.state.Waiting.Reason
			}
			return "", nil, errdefs.InvalidInputf("container %q in pod %q is waiting to start: %s", container, r.name, reason)
		}
		return r.logPath(container, c.runs-1), c.log, nil
	}
	return "", nil, errdefs.NotFoundf("container %q is not in pod %q", container, r.name)
}

func (r *podRuntime) logPath(container string, run int) string {
	return filepath.Join(r.dir, "logs", container, strconv.Itoa(run)+".log")
}
