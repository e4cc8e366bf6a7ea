package main

// Scenarios: many small jobs, or one big collective job, turned into pods by
// the controller; and the direct reference, the same number of plain pods
// created from one client.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// scenario is a batch of identical jobs created at once.
type scenario struct {
	Name        string
	Jobs        int
	PS, Workers int
	// RestartPolicy is every role's restartPolicy; empty leaves the default.
	RestartPolicy paddlev1.RestartPolicy
}

func (s scenario) podsPerJob() int { return s.PS + s.Workers }
func (s scenario) pods() int       { return s.Jobs * s.podsPerJob() }

// buildScenarios lists the many-jobs scenarios (jobCounts jobs of ps
// parameter servers and workers workers) then the big-job scenarios (one
// collective job of n workers for each n of bigJobs).
func buildScenarios(jobCounts []int, ps, workers int, bigJobs []int) []scenario {
	var out []scenario
	for _, n := range jobCounts {
		name := fmt.Sprintf("%d jobs × %d pods", n, ps+workers)
		if n == 1 {
			name = fmt.Sprintf("1 job × %d pods", ps+workers)
		}
		out = append(out, scenario{Name: name, Jobs: n, PS: ps, Workers: workers})
	}
	for _, n := range bigJobs {
		out = append(out, scenario{Name: fmt.Sprintf("1 job × %d workers", n), Jobs: 1, Workers: n})
	}
	return out
}

// parseCounts parses a comma-separated list of positive integers; empty
// means none.
func parseCounts(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--%s: %q is not a positive integer", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// jobObject is a PaddleJob of the scenario's shape: s.PS parameter servers
// (none: collective) and s.Workers workers, one container each.
func jobObject(name, ns string, s scenario, intranet, image string) (*unstructured.Unstructured, error) {
	role := func(n int) *paddlev1.ReplicaSpec {
		return &paddlev1.ReplicaSpec{
			Replicas:      int32(n),
			RestartPolicy: s.RestartPolicy,
			// The default account, as a cluster's admission sets it: the
			// progress endpoint's tokens (--progress-jobs) need one.
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				ServiceAccountName: "default",
				Containers:         []corev1.Container{{Name: "paddle", Image: image}},
			}},
		}
	}
	job := &paddlev1.PaddleJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: paddlev1.GroupVersion.String(), Kind: "PaddleJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       paddlev1.PaddleJobSpec{Intranet: paddlev1.Intranet(intranet), Worker: role(s.Workers)},
	}
	if s.PS > 0 {
		job.Spec.PS = role(s.PS)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// runResult is one run of a scenario.
type runResult struct {
	// AllCreated and Running are from the first create to the last pod
	// seen by the watch, and to the last job reporting phase Running.
	AllCreated, Running time.Duration
	// JobsCreated is when the last job create returned.
	JobsCreated time.Duration
	// Direct is the reference: the same number of pods created directly.
	Direct time.Duration
	// Ops are the operator's API requests during the scenario; OpsKnown is
	// false when the API server's metrics could not be read.
	Ops      requestCounts
	OpsKnown bool
	// CPU and PeakRSS are the operator's; PeakIsLifetime when the peak
	// could not be reset before the scenario.
	CPU            time.Duration
	PeakRSS        uint64
	PeakIsLifetime bool
	// ControlPlaneCPU is the CPU time of the kube-apiserver and etcd the
	// harness started, by name, from the first create to every job Running;
	// DirectControlPlaneCPU the same during the direct reference.
	ControlPlaneCPU, DirectControlPlaneCPU map[string]time.Duration
	// PodBytes and DirectPodBytes are the JSON size of one of the
	// operator's pods and of one of the direct reference's, as stored.
	PodBytes, DirectPodBytes int
	// templates are the operator's pods, for --direct-pods=copy.
	templates []*corev1.Pod
	// HarnessCPU is the harness's own CPU time (clients, watches, fake
	// kubelet) from the first create to every job Running.
	HarnessCPU time.Duration
	// Phases are what followed, with --restart-jobs and --complete-jobs.
	Phases []phaseResult
}

// runOperator runs one scenario through the controller and cleans up.
func (h *harness) runOperator(ctx context.Context, s scenario, timeout time.Duration) (runResult, error) {
	ns, err := h.createNamespace(ctx, "benchscale-")
	if err != nil {
		return runResult{}, err
	}
	defer func() {
		if err := h.cleanup(ctx, ns); err != nil {
			warnf("cleaning up namespace %s: %v", ns, err)
		}
	}()
	t := h.obs.track(ns, s.pods(), s.Jobs)
	defer h.obs.untrack(ns)

	h.waitOperatorQuiet(ctx)
	before, err := h.snapshot(ctx, true)
	if err != nil {
		return runResult{}, err
	}

	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	self, _ := readUsage(os.Getpid())
	start := time.Now()
	var res runResult
	if err := h.createJobs(sctx, ns, s); err != nil {
		return res, fmt.Errorf("%s: %w", s.Name, err)
	}
	res.JobsCreated = time.Since(start)
	for _, w := range []struct {
		done <-chan struct{}
		what string
	}{{t.allPods, "all pods created"}, {t.allRunning, "all jobs Running"}} {
		if err := h.await(sctx, w.done); err != nil {
			return res, fmt.Errorf("%s: waiting for %s after %s: %w; missing: %s",
				s.Name, w.what, time.Since(start).Round(time.Millisecond), err, t.missing())
		}
	}
	allPods, allRunning := t.times()
	res.AllCreated, res.Running = allPods.Sub(start), allRunning.Sub(start)
	// The control plane's CPU is read now: waiting for the operator to be
	// quiet scrapes /metrics, which costs the API server CPU of its own.
	cpAtRunning := h.controlPlaneUsage()
	if selfAtRunning, err := readUsage(os.Getpid()); err == nil {
		res.HarnessCPU = selfAtRunning.CPU - self.CPU
	}
	res.templates = h.obs.podsOf(ns)
	res.PodBytes = largestPodBytes(res.templates, 50)

	h.waitOperatorQuiet(ctx)
	after, err := h.snapshot(ctx, false)
	if err != nil {
		return res, err
	}
	after.cp = cpAtRunning
	h.fill(&res, before, after)
	if s.Jobs > 1 {
		res.Phases, err = h.runPhases(ctx, ns, s, t, timeout)
	}
	return res, err
}

// await waits for done, the context, or the operator's exit.
func (h *harness) await(ctx context.Context, done <-chan struct{}) error {
	var exited <-chan struct{}
	if h.op != nil {
		exited = h.op.exited
	}
	select {
	case <-done:
		return nil
	case <-exited:
		return h.op.alive()
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("timed out (--timeout)")
		}
		return ctx.Err()
	}
}

// createJobs creates the scenario's jobs from one client, --client-inflight
// at a time.
func (h *harness) createJobs(ctx context.Context, ns string, s scenario) error {
	width := len(strconv.Itoa(s.Jobs - 1))
	return h.parallel(ctx, s.Jobs, func(i int) error {
		name := fmt.Sprintf("job-%0*d", width, i)
		obj, err := jobObject(name, ns, s, h.cfg.intranet, h.cfg.image)
		if err != nil {
			return err
		}
		if _, err := h.c.creatorDyn.Resource(paddleJobs).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating PaddleJob %s/%s: %w", ns, name, err)
		}
		return nil
	})
}

// runDirect is the reference: s.pods() pods created from one client with the
// same settings as the jobs: plain pods of one container, or with
// --direct-pods=copy copies of the specs of the pods the operator just created
// (templates). It sets res.Direct, the time from the first create to the last
// create's response, and the control plane's CPU meanwhile.
func (h *harness) runDirect(ctx context.Context, s scenario, timeout time.Duration, templates []*corev1.Pod, res *runResult) error {
	ns, err := h.createNamespace(ctx, "benchscale-direct-")
	if err != nil {
		return err
	}
	defer func() {
		if err := h.cleanup(ctx, ns); err != nil {
			warnf("cleaning up namespace %s: %v", ns, err)
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	plain := &corev1.Pod{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "paddle", Image: h.cfg.image}},
	}}
	if h.cfg.directPods != directCopy || len(templates) == 0 {
		templates = []*corev1.Pod{plain}
	}
	cpBefore := h.controlPlaneUsage()
	start := time.Now()
	err = h.parallel(sctx, s.pods(), func(i int) error {
		// Without the job label, so the controller's informers ignore them.
		tmpl := templates[i%len(templates)]
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("direct-%d", i), Namespace: ns,
				Labels: map[string]string{"benchscale/direct": "true"}, Annotations: tmpl.Annotations,
			},
			Spec: tmpl.Spec,
		}
		if _, err := h.c.creator.CoreV1().Pods(ns).Create(sctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", ns, pod.Name, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: direct reference: %w", s.Name, err)
	}
	res.Direct = time.Since(start)
	res.DirectControlPlaneCPU = cpuSince(cpBefore, h.controlPlaneUsage())
	if p, err := h.c.admin.CoreV1().Pods(ns).Get(ctx, "direct-0", metav1.GetOptions{}); err == nil {
		res.DirectPodBytes = jsonSize(p)
	}
	return nil
}

// runWarmup runs one single-worker job through the controller until it is
// Running: the controller's caches are synced and it works (for
// --operator-cmd this is the readiness check).
func (h *harness) runWarmup(ctx context.Context, timeout time.Duration) error {
	s := scenario{Name: "warm-up (1 job × 1 worker)", Jobs: 1, Workers: 1}
	ns, err := h.createNamespace(ctx, "benchscale-warmup-")
	if err != nil {
		return err
	}
	defer func() {
		if err := h.cleanup(ctx, ns); err != nil {
			warnf("cleaning up namespace %s: %v", ns, err)
		}
	}()
	t := h.obs.track(ns, s.pods(), s.Jobs)
	defer h.obs.untrack(ns)
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := h.createJobs(sctx, ns, s); err != nil {
		return err
	}
	if err := h.await(sctx, t.allRunning); err != nil {
		return fmt.Errorf("%s: %w; missing: %s", s.Name, err, t.missing())
	}
	return nil
}

// parallel runs fn(0..n-1), --client-inflight at a time, stopping at the
// first error.
func (h *harness) parallel(ctx context.Context, n int, fn func(i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, h.cfg.clientInflight)
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (h *harness) createNamespace(ctx context.Context, prefix string) (string, error) {
	ns, err := h.c.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: map[string]string{"benchscale": "true"}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating a namespace: %w", err)
	}
	return ns.Name, nil
}

// cleanup empties and deletes a namespace: the jobs first (so the controller
// recreates nothing), then their pods, Services and ConfigMaps, waiting for
// the pods to be gone. With no controller-manager there is no garbage
// collector and no namespace controller to do it; the namespace itself then
// stays Terminating, empty.
func (h *harness) cleanup(ctx context.Context, ns string) error {
	// Clean up even when interrupted, but then briefly.
	limit := 5 * time.Minute
	if ctx.Err() != nil {
		limit = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	defer cancel()
	jobs := h.c.adminDyn.Resource(paddleJobs).Namespace(ns)
	if err := jobs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the PaddleJobs: %w", err)
	}
	if err := pollUntil(ctx, "the PaddleJobs to be gone", func() (bool, error) {
		l, err := jobs.List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(l.Items) == 0, err
	}); err != nil {
		return err
	}
	pods := h.c.admin.CoreV1().Pods(ns)
	// A pass of the controller that started before the jobs' deletion may
	// still create a pod: delete until none is left for a second.
	for quiet := 0; quiet < 2; {
		l, err := pods.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return fmt.Errorf("listing pods: %w", err)
		}
		if len(l.Items) == 0 {
			quiet++
		} else {
			quiet = 0
			// Unscheduled pods are deleted at once, without a grace period.
			if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				return fmt.Errorf("deleting the pods: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the pods of %s to be gone: %w", ns, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err := h.deleteServices(ctx, ns); err != nil {
		return err
	}
	if err := h.c.admin.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: h.cfg.podLabel}); err != nil {
		return fmt.Errorf("deleting the ConfigMaps: %w", err)
	}
	if err := h.c.admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the namespace: %w", err)
	}
	return nil
}

// deleteServices deletes the labelled Services of a namespace one by one
// (Services may not support deletecollection).
func (h *harness) deleteServices(ctx context.Context, ns string) error {
	svcs := h.c.admin.CoreV1().Services(ns)
	l, err := svcs.List(ctx, metav1.ListOptions{LabelSelector: h.cfg.podLabel})
	if err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	return h.parallel(ctx, len(l.Items), func(i int) error {
		if err := svcs.Delete(ctx, l.Items[i].Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Service %s: %w", l.Items[i].Name, err)
		}
		return nil
	})
}

// pollUntil polls cond every 200ms until it holds or ctx ends.
func pollUntil(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return fmt.Errorf("waiting for %s: %w", what, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
