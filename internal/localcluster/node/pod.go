package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Container waiting reasons, as the kubelet reports them.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonPodInitializing   = "PodInitializing"
	reasonConfigError       = "CreateContainerConfigError"
	reasonCreateError       = "CreateContainerError"
	reasonErrImagePull      = "ErrImagePull"
	reasonCrashLoopBackOff  = "CrashLoopBackOff"
	reasonCompleted         = "Completed"
	reasonError             = "Error"
	reasonStartError        = "StartError"
)

// retryInterval bounds the wait between attempts to start a container whose
// configuration or volumes are not ready; changes to the pod or to the
// ConfigMaps and Secrets of its namespace wake it sooner.
const retryInterval = 5 * time.Second

// defaultGracePeriod is the API's default terminationGracePeriodSeconds.
const defaultGracePeriod = 30 * time.Second

// waitError keeps a container waiting with a reason until something changes.
type waitError struct {
	reason string
	err    error
}

func (e *waitError) Error() string { return e.err.Error() }
func (e *waitError) Unwrap() error { return e.err }

// waitingReason is the container state reason an error to start it gives.
func waitingReason(err error) string {
	var we *waitError
	var ce *configError
	switch {
	case errors.As(err, &we):
		return we.reason
	case errors.As(err, &ce):
		return reasonConfigError
	}
	return reasonCreateError
}

// containerRun is the node's record of one container of a pod.
type containerRun struct {
	spec *corev1.Container
	init bool
	// runs counts the times the container was started.
	runs  int
	state corev1.ContainerState
	last  corev1.ContainerState
	// log is the latest run's log.
	log *containerLog
	// lastWarning avoids repeating an event while a container keeps waiting
	// for the same reason.
	lastWarning string
}

func (c *containerRun) restartCount() int32 { return int32(max(c.runs-1, 0)) }

func (c *containerRun) status(podUID types.UID) corev1.ContainerStatus {
	running := c.state.Running != nil
	s := corev1.ContainerStatus{
		Name:                 c.spec.Name,
		Image:                c.spec.Image,
		ImageID:              c.spec.Image,
		RestartCount:         c.restartCount(),
		State:                *c.state.DeepCopy(),
		LastTerminationState: *c.last.DeepCopy(),
		Ready:                running,
		Started:              ptr.To(running),
	}
	if c.runs > 0 {
		s.ContainerID = containerID(podUID, c.spec.Name, c.runs-1)
	}
	return s
}

// containerID names a run of a container in statuses.
func containerID(podUID types.UID, container string, run int) string {
	return fmt.Sprintf("paddlejob://%s-%s-%d", podUID, container, run)
}

// podRuntime runs one pod: its sandbox files and volumes, then its init
// containers in order, then its containers, until none will run again.
type podRuntime struct {
	p         *Provider
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

	// mu guards the fields below.
	mu           sync.Mutex
	pod          *corev1.Pod
	initRuns     []*containerRun
	runs         []*containerRun
	volumes      map[string]podVolume
	sandboxReady bool
	stopping     bool
	killAt       time.Time
	shutdown     bool
	deleting     bool
	finished     bool
	// lastPodWarning avoids repeating a pod event, as lastWarning does.
	lastPodWarning string
	// inHosts is guarded by Provider.hostsMu.
	inHosts bool
}

func newPodRuntime(p *Provider, pod *corev1.Pod, ip string, predecessor *podRuntime) *podRuntime {
	pod = pod.DeepCopy()
	r := &podRuntime{
		p:           p,
		key:         podKey(pod.Namespace, pod.Name),
		name:        pod.Name,
		namespace:   pod.Namespace,
		uid:         pod.UID,
		dir:         filepath.Join(p.podsDir(), fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		ip:          ip,
		hostname:    podHostname(pod, p.hostname),
		start:       metav1.NewTime(p.clock.Now()),
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
		r.initRuns = append(r.initRuns, &containerRun{spec: &pod.Spec.InitContainers[i], init: true,
			state: waiting(firstReason, "")})
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
	h := pod.Spec.Hostname
	if h == "" {
		h = pod.Name
	}
	if len(h) > 63 {
		h = h[:63]
	}
	return h
}

func waiting(reason, message string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
}

// run is the pod's goroutine.
func (r *podRuntime) run() {
	defer close(r.done)
	if r.predecessor != nil {
		<-r.predecessor.done
	}
	r.execute(r.ctx)
	// Ends the helpers (projection refreshes) of a pod that completed.
	r.cancel()
	r.finish()
}

func (r *podRuntime) execute(ctx context.Context) {
	if !r.retry(ctx, r.prepare) {
		return
	}
	go r.refreshProjectionsLoop(ctx)
	for _, c := range r.initRuns {
		if !r.runContainer(ctx, c) {
			return
		}
	}
	var wg sync.WaitGroup
	for _, c := range r.runs {
		wg.Go(func() { r.runContainer(ctx, c) })
	}
	wg.Wait()
}

// retry runs step until it succeeds; false if the pod was stopped first.
func (r *podRuntime) retry(ctx context.Context, step func(context.Context) error) bool {
	for {
		changed := r.changed.changed()
		err := step(ctx)
		if err == nil {
			return true
		}
		r.p.log.V(1).Info("Pod not ready to start", "pod", r.key, "err", err.Error())
		select {
		case <-changed:
		case <-r.p.clock.After(retryInterval):
		case <-ctx.Done():
			return false
		}
	}
}

// prepare puts the pod's files in place: its directories, hostname and hosts
// files, and volumes.
func (r *podRuntime) prepare(ctx context.Context) error {
	for _, d := range []string{"etc", "logs", "volumes"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			return r.failPreparing("FailedCreatePodSandBox", err)
		}
	}
	if err := os.WriteFile(r.hostnamePath(), []byte(r.hostname+"\n"), 0o644); err != nil {
		return r.failPreparing("FailedCreatePodSandBox", err)
	}
	if err := r.p.joinHosts(r); err != nil {
		return r.failPreparing("FailedCreatePodSandBox", err)
	}
	r.mu.Lock()
	r.sandboxReady = true
	r.mu.Unlock()
	r.publish()

	pod := r.podCopy()
	vols := map[string]podVolume{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if isProjection(v) {
			vols[v.Name] = podVolume{Name: v.Name, HostPath: r.projectionDir(v.Name), ReadOnly: true, Projection: true}
			continue
		}
		pv, err := setUpHostVolume(ctx, r.p.client, pod.Namespace, r.dir, v)
		if err != nil {
			return r.failPreparing("FailedMount", err)
		}
		vols[v.Name] = pv
	}
	if err := r.syncProjections(); err != nil {
		return r.failPreparing("FailedMount", err)
	}
	r.mu.Lock()
	r.volumes = vols
	r.mu.Unlock()
	return nil
}

// failPreparing records why the pod cannot start yet on its waiting
// containers and in an event.
func (r *podRuntime) failPreparing(reason string, err error) error {
	r.mu.Lock()
	for _, c := range r.allRuns() {
		if c.state.Waiting != nil {
			c.state.Waiting.Message = err.Error()
		}
	}
	r.mu.Unlock()
	r.warnOnce(nil, reason, err.Error())
	r.publish()
	return err
}

func (r *podRuntime) refreshProjectionsLoop(ctx context.Context) {
	for {
		changed := r.changed.changed()
		if err := r.syncProjections(); err != nil {
			// The kubelet keeps the last content when an object goes away.
			r.p.log.V(1).Info("Cannot refresh volume", "pod", r.key, "err", err.Error())
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// syncProjections writes the configMap, secret, downwardAPI and projected
// volumes whose content changed.
func (r *podRuntime) syncProjections() error {
	r.volumesMu.Lock()
	defer r.volumesMu.Unlock()
	pod := r.podCopy()
	if r.projections == nil {
		r.projections = map[string][32]byte{}
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !isProjection(v) {
			continue
		}
		files, warnings, err := projectionPayload(pod, v, r.p.objects, r.p.allocatable)
		if err != nil {
			return fmt.Errorf("volume %q: %w", v.Name, err)
		}
		d := payloadDigest(files)
		if prev, ok := r.projections[v.Name]; ok && prev == d {
			continue
		}
		for _, w := range warnings {
			r.p.log.Info("Skipping part of a volume", "pod", r.key, "warning", w)
		}
		if err := writeProjection(r.projectionDir(v.Name), files); err != nil {
			return fmt.Errorf("writing volume %q: %w", v.Name, err)
		}
		r.projections[v.Name] = d
	}
	return nil
}

// runContainer runs a container until it need not run again: an init
// container until it succeeds, a container as its restart policy says. It
// reports whether the container's last run succeeded.
func (r *podRuntime) runContainer(ctx context.Context, c *containerRun) bool {
	var backoff time.Duration
	for ctx.Err() == nil {
		changed := r.changed.changed()
		spec, err := r.buildProcess(c)
		if err != nil {
			r.setState(c, waiting(waitingReason(err), err.Error()))
			r.warnOnce(c, "Failed", err.Error())
			select {
			case <-changed:
			case <-r.p.clock.After(retryInterval):
			case <-ctx.Done():
				return false
			}
			continue
		}
		term := r.runOnce(ctx, c, spec)
		if r.isStopping() {
			return false
		}
		if !shouldRestart(r.restartPolicy(), c.init, term.ExitCode) {
			return term.ExitCode == 0
		}
		backoff = nextBackoff(backoff, term.FinishedAt.Sub(term.StartedAt.Time))
		msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", backoff, c.spec.Name, r.name, r.namespace, r.uid)
		r.mu.Lock()
		c.last = corev1.ContainerState{Terminated: &term}
		c.state = waiting(reasonCrashLoopBackOff, msg)
		r.mu.Unlock()
		r.publish()
		r.event(corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container "+c.spec.Name)
		select {
		case <-r.p.clock.After(backoff):
		case <-ctx.Done():
		}
	}
	return false
}

// runOnce starts the container and waits for it to end, stopping it if the
// pod is stopped.
func (r *podRuntime) runOnce(ctx context.Context, c *containerRun, spec processSpec) corev1.ContainerStateTerminated {
	started := metav1.NewTime(r.p.clock.Now())
	proc, err := startProcess(r.p.spawner, spec)
	if err != nil {
		_ = spec.Log.close()
		term := corev1.ContainerStateTerminated{ExitCode: 128, Reason: reasonStartError, Message: err.Error(), StartedAt: started, FinishedAt: started}
		r.setState(c, corev1.ContainerState{Terminated: &term})
		r.event(corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
		return term
	}
	r.mu.Lock()
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	c.lastWarning = ""
	run := c.runs - 1
	r.mu.Unlock()
	r.publish()
	r.event(corev1.EventTypeNormal, "Started", "Started container "+c.spec.Name)

	r.awaitExit(ctx, c, proc)
	_ = spec.Log.close()
	finished := metav1.NewTime(r.p.clock.Now())
	term := corev1.ContainerStateTerminated{
		ExitCode:    proc.exitCode,
		Reason:      reasonCompleted,
		StartedAt:   started,
		FinishedAt:  finished,
		ContainerID: containerID(r.uid, c.spec.Name, run),
	}
	output := spec.Log.terminationMessage()
	if line, ok := startFailure(term.ExitCode, finished.Sub(started.Time), output); ok {
		term.ExitCode, term.Reason, term.Message = 128, reasonStartError, line
	} else if term.ExitCode != 0 {
		term.Reason = reasonError
		if c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
			term.Message = output
		}
	}
	r.setState(c, corev1.ContainerState{Terminated: &term})
	r.p.log.V(1).Info("Container exited", "pod", r.key, "container", c.spec.Name, "exitCode", term.ExitCode, "reason", term.Reason)
	return term
}

// awaitExit waits for the process to end. When the pod is stopped it sends
// SIGTERM to the container's processes, waits out the grace period (which a
// later stop may shorten) and then sends SIGKILL.
func (r *podRuntime) awaitExit(ctx context.Context, c *containerRun, proc *process) {
	select {
	case <-proc.exited:
		return
	case <-ctx.Done():
	}
	r.event(corev1.EventTypeNormal, "Killing", "Stopping container "+c.spec.Name)
	proc.signal(syscall.SIGTERM)
	for {
		graceChanged := r.graceChanged.changed()
		r.mu.Lock()
		left := r.killAt.Sub(r.p.clock.Now())
		r.mu.Unlock()
		if left <= 0 {
			proc.signal(syscall.SIGKILL)
			<-proc.exited
			return
		}
		timer := r.p.clock.NewTimer(left)
		select {
		case <-proc.exited:
			timer.Stop()
			return
		case <-timer.C():
		case <-graceChanged:
			timer.Stop()
		}
	}
}

// buildProcess works out how to start the container's next run: command,
// environment, mounts and sandbox. Errors keep the container waiting.
func (r *podRuntime) buildProcess(c *containerRun) (processSpec, error) {
	bwrap, err := r.p.bwrapPath()
	if err != nil {
		return processSpec{}, &waitError{reason: reasonCreateError, err: err}
	}
	pod := r.podCopy()
	r.mu.Lock()
	vols := r.volumes
	r.mu.Unlock()

	entry, known := r.p.images.Lookup(c.spec.Image)
	if !known && len(c.spec.Command) == 0 {
		return processSpec{}, &waitError{reason: reasonErrImagePull, err: errors.New(r.p.images.unknownImageMessage(c.spec.Image))}
	}
	env, err := r.environment(pod, c.spec, entry)
	if err != nil {
		return processSpec{}, err
	}
	argv, err := containerArgv(c.spec, entry, known)
	if err != nil {
		return processSpec{}, &waitError{reason: reasonCreateError, err: err}
	}
	for i := range argv {
		argv[i] = expandVars(argv[i], env.lookup)
	}

	plans, err := planMounts(c.spec, vols, env.lookup)
	if err != nil {
		return processSpec{}, err
	}
	var volumeMounts []mount
	var volumeTargets []string
	for _, pl := range plans {
		src, err := pl.source()
		if err != nil {
			return processSpec{}, err
		}
		volumeMounts = append(volumeMounts, mount{Source: src, Target: pl.Target, ReadOnly: pl.ReadOnly})
		volumeTargets = append(volumeTargets, pl.Target)
	}
	wd := c.spec.WorkingDir
	if wd == "" {
		wd = entry.WorkingDir
	}
	// The image's files first: volumes are mounted over them.
	mounts, err := prepareImageMounts(r.p.hostFS, r.imageRoot(c.spec.Name), entry, wd, volumeTargets)
	if err != nil {
		return processSpec{}, &waitError{reason: reasonCreateError, err: fmt.Errorf("image %q: %w", c.spec.Image, err)}
	}
	mounts = append(mounts, volumeMounts...)
	// The command is looked up on the container's PATH (the image's, unless
	// the container sets its own) as the sandbox will see it.
	path, _ := env.lookup("PATH")
	argv[0] = resolveCommand(argv[0], path, mounts)

	logPath := r.logPath(c.spec.Name, c.runs)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return processSpec{}, err
	}
	// Keep this run's log and the previous one, as the kubelet does.
	_ = os.Remove(r.logPath(c.spec.Name, c.runs-2))
	log, err := createContainerLog(logPath, r.p.clock)
	if err != nil {
		return processSpec{}, err
	}
	r.mu.Lock()
	c.runs++
	c.log = log
	r.mu.Unlock()

	args := bwrapArgs(r.p.hostFS, sandboxSpec{
		Hostname:     r.hostname,
		HostsFile:    r.hostsPath(),
		HostnameFile: r.hostnamePath(),
		Mounts:       mounts,
		WorkingDir:   wd,
		Argv:         argv,
	})
	return processSpec{Bwrap: bwrap, Args: args, Env: env.strings(), Log: log}, nil
}

// environment is the container's environment: the node's PATH and HOME (the
// host stands in for the image), HOSTNAME, the API server's address, the
// image table's env, the emulated GPUs' devices, then the container's
// resolved env.
func (r *podRuntime) environment(pod *corev1.Pod, c *corev1.Container, entry ImageEntry) (*envList, error) {
	resolved, err := containerEnv(pod, c, r.addresses(), r.p.allocatable, r.p.objects)
	if err != nil {
		return nil, err
	}
	env := &envList{}
	env.set("PATH", r.p.defaultPath)
	if home := os.Getenv("HOME"); home != "" {
		env.set("HOME", home)
	}
	env.set("HOSTNAME", r.hostname)
	for _, v := range r.p.apiServerEnv {
		env.set(v.Name, v.Value)
	}
	for _, k := range sortedKeys(entry.Env) {
		env.set(k, entry.Env[k])
	}
	// As a device plugin's, these override the image's and yield to the
	// container's own.
	for _, v := range gpuEnv(c) {
		env.set(v.Name, v.Value)
	}
	for _, v := range resolved.vars {
		env.set(v.Name, v.Value)
	}
	return env, nil
}

func (r *podRuntime) addresses() podAddresses {
	return podAddresses{PodIPs: []string{r.ip}, HostIPs: []string{r.p.nodeIP}}
}

// finish releases what the pod held once no container will run again.
func (r *podRuntime) finish() {
	r.p.tokens.forget(r.uid)
	r.mu.Lock()
	r.finished = true
	r.sandboxReady = false
	r.mu.Unlock()
	r.p.leaveHosts(r)
	r.p.ipam.release(string(r.uid))
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
	killAt := r.p.clock.Now().Add(grace)
	if !r.stopping || killAt.Before(r.killAt) {
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
// is gone from the API.
func (r *podRuntime) publish() {
	if base := r.p.apiPodStatus(r); base != nil {
		r.p.notifyPod(r.snapshotOver(base))
	}
}

// snapshot is the pod with the status the node reports.
func (r *podRuntime) snapshot() *corev1.Pod {
	return r.snapshotOver(r.p.apiPodStatus(r))
}

// snapshotOver computes the status over base, the status the API holds (nil
// when unknown).
func (r *podRuntime) snapshotOver(base *corev1.PodStatus) *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	pod := r.pod.DeepCopy()
	if base == nil {
		base = pod.Status.DeepCopy()
	}
	in := statusInput{
		Spec:         &pod.Spec,
		Base:         *base,
		PodIPs:       []string{r.ip},
		HostIPs:      []string{r.p.nodeIP},
		StartTime:    &r.start,
		SandboxReady: r.sandboxReady,
		Terminal:     r.finished && r.stopping,
		Shutdown:     r.shutdown,
		Now:          metav1.NewTime(r.p.clock.Now()),
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
	r.p.recorder.Event(r.podCopy(), eventType, reason, message)
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

// imageRoot is where a container's copy of its image's files is made.
func (r *podRuntime) imageRoot(container string) string {
	return filepath.Join(r.dir, "containers", container, "rootfs")
}

func (r *podRuntime) hostsPath() string    { return filepath.Join(r.dir, "etc", "hosts") }
func (r *podRuntime) hostnamePath() string { return filepath.Join(r.dir, "etc", "hostname") }
func (r *podRuntime) projectionDir(volume string) string {
	return filepath.Join(r.dir, "volumes", volume)
}

// gracePeriod is how long a deleted pod's containers get to stop.
func gracePeriod(pod *corev1.Pod) time.Duration {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return defaultGracePeriod
}
