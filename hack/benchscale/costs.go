package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// The request costs explain the scenarios' times on a machine where the API
// server is the bottleneck: each kind of request the scenarios issue is sent
// alone, n times, on an otherwise idle control plane (the controller
// stopped), and the kube-apiserver's CPU time is divided by n.

// requestCost is the kube-apiserver CPU time of one request of a kind.
type requestCost struct {
	Kind string
	CPU  time.Duration
}

// costStep is one kind of request, sent n times: the i-th call sends the
// i-th request.
type costStep struct {
	kind string
	call func(ctx context.Context, i int) error
}

// measureRequestCosts sends each kind of request n times from the admin
// client, --client-inflight at a time, in a namespace of its own. operatorPod
// is a pod the controller created, whose spec and metadata the "operator's
// pod" requests copy (its labels renamed, so no watch of the harness or the
// controller takes the copies for the controller's).
func (h *harness) measureRequestCosts(ctx context.Context, n int, operatorPod *corev1.Pod) ([]requestCost, error) {
	if h.cpPIDs["kube-apiserver"] == 0 {
		return nil, fmt.Errorf("the kube-apiserver's CPU time is only known on the control plane the harness starts")
	}
	ns, err := h.createNamespace(ctx, "benchscale-costs-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := h.cleanup(ctx, ns); err != nil {
			warnf("cleaning up namespace %s: %v", ns, err)
		}
	}()
	var out []requestCost
	for _, step := range h.costSteps(ns, n, operatorPod) {
		cpu, err := h.apiserverCPUPerRequest(ctx, n, step.call)
		if err != nil {
			return out, fmt.Errorf("%s: %w", step.kind, err)
		}
		out = append(out, requestCost{Kind: step.kind, CPU: cpu})
	}
	return out, nil
}

func (h *harness) costSteps(ns string, n int, operatorPod *corev1.Pod) []costStep {
	f := &costFixture{h: h, ns: ns, operatorPod: operatorPod,
		s:       scenario{Jobs: 1, PS: h.cfg.ps, Workers: h.cfg.workers},
		created: make([]*unstructured.Unstructured, n),
	}
	pods := h.c.admin.CoreV1().Pods(ns)
	steps := []costStep{
		{"create PaddleJob", f.createJob},
		{"update PaddleJob status", f.updateStatus},
		{"create ConfigMap", func(ctx context.Context, i int) error {
			_, err := h.c.admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)},
				Data:       map[string]string{"PADDLE_TRAINER_ENDPOINTS": "job-worker-0.job:2379,job-worker-1.job:2379", "version": "0123456789abcdef"},
			}, metav1.CreateOptions{})
			return err
		}},
		{"create headless Service", func(ctx context.Context, i int) error {
			_, err := h.c.admin.CoreV1().Services(ns).Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%d", i)},
				Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
					Selector: map[string]string{"benchscale-costs/job": fmt.Sprint(i)}},
			}, metav1.CreateOptions{})
			return err
		}},
		{"create Event", func(ctx context.Context, i int) error {
			_, err := h.c.admin.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("event-%d", i)},
				EventTime:  metav1.NowMicro(), ReportingController: "benchscale", ReportingInstance: "benchscale",
				Action: "Create", Reason: "SuccessfulCreatePod", Type: corev1.EventTypeNormal, Note: "Created 4 pods",
				Regarding: corev1.ObjectReference{Kind: "PaddleJob", Namespace: ns, Name: f.jobName(i)},
			}, metav1.CreateOptions{})
			return err
		}},
		{"create pod: plain", func(ctx context.Context, i int) error {
			_, err := pods.Create(ctx, f.plainPod(i), metav1.CreateOptions{})
			return err
		}},
		{"mark pod Running: plain", f.markRunning(f.plainPod)},
	}
	if operatorPod != nil {
		steps = append(steps,
			costStep{"create pod: the controller's", func(ctx context.Context, i int) error {
				_, err := pods.Create(ctx, f.copyPod(i), metav1.CreateOptions{})
				return err
			}},
			costStep{"mark pod Running: the controller's", f.markRunning(f.copyPod)})
	}
	return steps
}

// costFixture makes the objects of the cost steps, and remembers the jobs
// created, for the status updates.
type costFixture struct {
	h           *harness
	ns          string
	s           scenario
	created     []*unstructured.Unstructured // by createJob
	operatorPod *corev1.Pod
}

func (f *costFixture) jobName(i int) string { return fmt.Sprintf("job-%d", i) }

func (f *costFixture) createJob(ctx context.Context, i int) error {
	obj, err := jobObject(f.jobName(i), f.ns, f.s, f.h.cfg.intranet, f.h.cfg.image)
	if err != nil {
		return err
	}
	obj, err = f.h.c.adminDyn.Resource(paddleJobs).Namespace(f.ns).Create(ctx, obj, metav1.CreateOptions{})
	if err == nil {
		f.created[i] = obj
	}
	return err
}

// updateStatus writes the status a controller writes once a job's pods are
// created, onto the job as created: no read.
func (f *costFixture) updateStatus(ctx context.Context, i int) error {
	obj := f.created[i].DeepCopy()
	now := metav1.Now().UTC().Format(time.RFC3339)
	status := map[string]any{
		"phase": "Pending", "mode": "PS", "observedGeneration": int64(1), "startTime": now,
		"conditions": []any{map[string]any{
			"type": "Created", "status": "True", "reason": "PodsCreated", "observedGeneration": int64(1),
			"message": fmt.Sprintf("all %d pods created", f.s.podsPerJob()), "lastTransitionTime": now,
		}},
		"ps":     map[string]any{"pending": int64(f.s.PS)},
		"worker": map[string]any{"pending": int64(f.s.Workers)},
	}
	if err := unstructured.SetNestedField(obj.Object, status, "status"); err != nil {
		return err
	}
	_, err := f.h.c.adminDyn.Resource(paddleJobs).Namespace(f.ns).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	return err
}

func (f *costFixture) plainPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("plain-%d", i), Namespace: f.ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "paddle", Image: f.h.cfg.image}},
		},
	}
}

// copyPod is a copy of a pod the controller made, its labels renamed out of
// every watch's way.
func (f *costFixture) copyPod(i int) *corev1.Pod {
	op := f.operatorPod
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("copy-%d", i), Namespace: f.ns,
			Labels: map[string]string{}, Annotations: maps.Clone(op.Annotations),
			OwnerReferences: op.OwnerReferences,
		},
		Spec: *op.Spec.DeepCopy(),
	}
	for k, v := range op.Labels {
		p.Labels[costLabel(k)] = v
	}
	return p
}

// markRunning patches a pod Running as the fake kubelet does, from its
// informer's copy: no read here either.
func (f *costFixture) markRunning(pod func(int) *corev1.Pod) func(context.Context, int) error {
	return func(ctx context.Context, i int) error {
		p := pod(i)
		patch, err := runningStatusPatch(p, fakePodIP(uint32(i)), "127.0.0.1", time.Now())
		if err != nil {
			return err
		}
		_, err = f.h.c.admin.CoreV1().Pods(f.ns).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	}
}

// costLabel renames a label key out of every watch's way, keeping its size.
func costLabel(key string) string {
	if strings.Contains(key, "/") {
		return "costs." + key
	}
	return "costs/" + key
}

// apiserverCPUPerRequest runs call n times and returns the kube-apiserver's
// CPU time per call, from a second before the first call to a second after
// the last (the API server's work on a request outlives its response:
// watch fan-out, audit, garbage).
func (h *harness) apiserverCPUPerRequest(ctx context.Context, n int, call func(context.Context, int) error) (time.Duration, error) {
	pid := h.cpPIDs["kube-apiserver"]
	time.Sleep(time.Second)
	before, err := readUsage(pid)
	if err != nil {
		return 0, err
	}
	if err := h.parallel(ctx, n, func(i int) error { return call(ctx, i) }); err != nil {
		return 0, err
	}
	time.Sleep(time.Second)
	after, err := readUsage(pid)
	if err != nil {
		return 0, err
	}
	return (after.CPU - before.CPU) / time.Duration(n), nil
}

// formatRequestCosts writes the request costs as a table.
func formatRequestCosts(w io.Writer, n int, costs []requestCost) {
	if len(costs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nkube-apiserver CPU per request, each kind sent %d times alone on the idle control plane (controller stopped):\n\n", n)
	fmt.Fprintln(w, "| request | kube-apiserver CPU (ms) |")
	fmt.Fprintln(w, "|---|---:|")
	for _, c := range costs {
		fmt.Fprintf(w, "| %s | %.2f |\n", c.Kind, float64(c.CPU.Microseconds())/1000)
	}
}
