package main

// Watching what the controller does: one shared informer on the pods that
// carry the job label and one on the PaddleJobs, across namespaces. Each
// scenario registers its namespace with a tracker that notes when the last
// expected pod appeared and when the last job reported phase Running.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

var paddleJobs = paddlev1.GroupVersion.WithResource("paddlejobs")

// observer dispatches informer events to the tracker of their namespace.
type observer struct {
	mu       sync.Mutex
	trackers map[string]*tracker
	// onPod, when set, sees every pod event of a tracked namespace (the
	// fake kubelet).
	onPod func(*corev1.Pod)
	// holdPods keeps the pods of a namespace from onPod until they all
	// exist (--kubelet-after-created).
	holdPods bool
	pods     cache.SharedIndexInformer
}

// startObserver starts the informers and waits for their caches.
func startObserver(ctx context.Context, c *clients, podLabel string, jobResource schema.GroupVersionResource) (*observer, error) {
	o := &observer{trackers: map[string]*tracker{}}
	pf := informers.NewSharedInformerFactoryWithOptions(c.admin, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = podLabel }))
	o.pods = pf.Core().V1().Pods().Informer()
	if _, err := o.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.pod(obj) },
		UpdateFunc: func(_, obj any) { o.pod(obj) },
	}); err != nil {
		return nil, err
	}
	jf := dynamicinformer.NewDynamicSharedInformerFactory(c.adminDyn, 0)
	jobs := jf.ForResource(jobResource).Informer()
	if _, err := jobs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.job(obj) },
		UpdateFunc: func(_, obj any) { o.job(obj) },
	}); err != nil {
		return nil, err
	}
	pf.Start(ctx.Done())
	jf.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), o.pods.HasSynced, jobs.HasSynced) {
		return nil, fmt.Errorf("the harness's informers on pods (%s) and %s did not sync within a minute (is the CRD installed?)", podLabel, jobResource.Resource)
	}
	return o, nil
}

// track starts tracking a namespace.
func (o *observer) track(ns string, wantPods, wantJobs int) *tracker {
	t := &tracker{
		wantPods: wantPods, wantJobs: wantJobs,
		pods: map[string]bool{}, phases: map[string]string{},
		allPods: make(chan struct{}), allRunning: make(chan struct{}),
	}
	o.mu.Lock()
	o.trackers[ns] = t
	o.mu.Unlock()
	return t
}

func (o *observer) untrack(ns string) {
	o.mu.Lock()
	delete(o.trackers, ns)
	o.mu.Unlock()
}

func (o *observer) tracker(ns string) *tracker {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.trackers[ns]
}

func (o *observer) pod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	t := o.tracker(p.Namespace)
	if t == nil {
		return
	}
	now := time.Now()
	completed := t.podSeen(p.Name, now)
	if pt := t.currentPhase(); pt != nil {
		pt.pod(p, now)
	}
	switch {
	case o.onPod == nil:
	case !o.holdPods:
		o.onPod(p)
	case completed:
		for _, obj := range o.pods.GetStore().List() {
			if q, ok := obj.(*corev1.Pod); ok && q.Namespace == p.Namespace {
				o.onPod(q)
			}
		}
	default:
		select {
		case <-t.allPods:
			o.onPod(p)
		default:
		}
	}
}

func (o *observer) job(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	t := o.tracker(u.GetNamespace())
	if t == nil {
		return
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	now := time.Now()
	t.jobPhase(u.GetName(), phase, now)
	if pt := t.currentPhase(); pt != nil {
		pt.job(u, now)
	}
}

// podsIn counts the informer's pods of a namespace.
func (o *observer) podsIn(ns string) int {
	n := 0
	for _, obj := range o.pods.GetStore().List() {
		if p, ok := obj.(*corev1.Pod); ok && p.Namespace == ns {
			n++
		}
	}
	return n
}

// podsOf returns the informer's pods of a namespace (shared: read only).
func (o *observer) podsOf(ns string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, obj := range o.pods.GetStore().List() {
		if p, ok := obj.(*corev1.Pod); ok && p.Namespace == ns {
			out = append(out, p)
		}
	}
	return out
}

// largestPodBytes is the JSON size, status included, of the largest of the
// first n pods (the pods of a scenario are alike; encoding them all would
// cost seconds).
func largestPodBytes(pods []*corev1.Pod, n int) int {
	largest := 0
	for _, p := range pods[:min(n, len(pods))] {
		largest = max(largest, jsonSize(p))
	}
	return largest
}

func jsonSize(p *corev1.Pod) int {
	b, err := json.Marshal(p)
	if err != nil {
		return 0
	}
	return len(b)
}

// tracker follows one scenario's namespace.
type tracker struct {
	mu                 sync.Mutex
	wantPods, wantJobs int
	pods               map[string]bool
	phases             map[string]string
	running            int
	allPodsAt          time.Time
	allRunningAt       time.Time
	allPods            chan struct{}
	allRunning         chan struct{}
	// phase, when set, also sees every pod and job event (phases.go).
	phase *phaseTracker
}

func (t *tracker) setPhase(pt *phaseTracker) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phase = pt
}

func (t *tracker) currentPhase() *phaseTracker {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.phase
}

// podSeen notes a pod; it returns true when that pod was the last one
// expected.
func (t *tracker) podSeen(name string, at time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pods[name] {
		return false
	}
	t.pods[name] = true
	if len(t.pods) == t.wantPods {
		t.allPodsAt = at
		close(t.allPods)
		return true
	}
	return false
}

func (t *tracker) jobPhase(name, phase string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, seen := t.phases[name]
	if seen && old == phase {
		return
	}
	t.phases[name] = phase
	switch {
	case phase == string(paddlev1.PaddleJobRunning):
		t.running++
	case old == string(paddlev1.PaddleJobRunning):
		t.running--
	}
	if t.running == t.wantJobs && t.allRunningAt.IsZero() {
		t.allRunningAt = at
		close(t.allRunning)
	}
}

// missing describes what has not happened yet, for a timeout's message.
func (t *tracker) missing() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	if len(t.pods) < t.wantPods {
		parts = append(parts, fmt.Sprintf("%d of %d pods created", len(t.pods), t.wantPods))
	}
	if t.running < t.wantJobs {
		byPhase := map[string]int{}
		for _, p := range t.phases {
			if p == "" {
				p = "no phase"
			}
			byPhase[p]++
		}
		if unseen := t.wantJobs - len(t.phases); unseen > 0 {
			byPhase["not seen"] += unseen
		}
		var phases []string
		for p, n := range byPhase {
			if p != string(paddlev1.PaddleJobRunning) {
				phases = append(phases, fmt.Sprintf("%d %s", n, p))
			}
		}
		sort.Strings(phases)
		parts = append(parts, fmt.Sprintf("%d of %d jobs Running (others: %s)", t.running, t.wantJobs, strings.Join(phases, ", ")))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

// times returns when the last pod appeared and when the last job ran.
func (t *tracker) times() (allPods, allRunning time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.allPodsAt, t.allRunningAt
}
