package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// slowStartInitialBatch is the first batch of a job's pod creates; each
// successful batch doubles the next, so a job whose pods are all refused
// (quota, admission) fails after a handful of requests, not thousands.
const slowStartInitialBatch = 16

// createMissingPods creates every pod the spec wants that does not exist,
// in parallel, and returns the pods it created. Pods whose name is still held
// by a pod being deleted are left for the pass its deletion triggers. opts
// are the job's pod options, computed once per pass.
func (r *PaddleJobReconciler) createMissingPods(ctx context.Context, job *paddlev1.PaddleJob, all, active []*corev1.Pod, opts podOptions) ([]*corev1.Pod, error) {
	taken := make(map[string]bool, len(all))
	for _, p := range all {
		taken[p.Name] = true
	}
	type slot struct {
		rt    paddlev1.ReplicaType
		index int
	}
	var missing []slot
	for _, rt := range paddlev1.ReplicaTypes {
		for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
			if !taken[paddlev1.PodName(job.Name, rt, i)] {
				missing = append(missing, slot{rt, i})
			}
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}

	opts.glooStorePrefix = glooStorePrefix(job, all)
	pods := make([]*corev1.Pod, len(missing))
	for i, s := range missing {
		pods[i] = newPod(job, s.rt, s.index, podPorts(job, s.rt, s.index), opts)
	}

	var created []*corev1.Pod
	var mu sync.Mutex
	var errs []error
	for batch := slowStartInitialBatch; len(pods) > 0; batch *= 2 {
		n := min(batch, len(pods))
		err := r.forEach(ctx, pods[:n], func(p *corev1.Pod) error {
			err := r.Create(ctx, p)
			switch {
			case err == nil:
				mu.Lock()
				created = append(created, p)
				mu.Unlock()
				return nil
			case apierrors.IsAlreadyExists(err):
				return nil // created by an earlier pass the cache has not shown yet
			case isPodSecurityRefusal(err):
				return &podSecurityError{pod: p.Name, namespace: p.Namespace, err: err}
			default:
				return fmt.Errorf("creating pod %s: %w", p.Name, err)
			}
		})
		pods = pods[n:]
		if err != nil {
			errs = append(errs, err)
			break
		}
	}
	r.expect.expectCreates(refOf(job), created, r.Clock.Now())
	if len(created) > 0 {
		r.eventf(job, corev1.EventTypeNormal, "SuccessfulCreatePod", "Create", "Created %d pods: %s", len(created), listNames(podNames(sortPods(created))))
	}
	err := errors.Join(errs...)
	if err != nil {
		r.eventf(job, corev1.EventTypeWarning, "FailedCreatePod", "Create", "%v", err)
	}
	return created, err
}

// deletePods deletes pods decided on from the cache, with preconditions so a
// stale decision can never remove a newer pod of the same name.
func (r *PaddleJobReconciler) deletePods(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, why string) error {
	if len(pods) == 0 {
		return nil
	}
	var mu sync.Mutex
	var deleted []*corev1.Pod
	err := r.forEach(ctx, pods, func(p *corev1.Pod) error {
		uid, rv := p.UID, p.ResourceVersion
		err := r.Delete(ctx, p, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		switch {
		case err == nil:
			mu.Lock()
			deleted = append(deleted, p)
			mu.Unlock()
			return nil
		case apierrors.IsNotFound(err):
			return nil
		default:
			return fmt.Errorf("deleting pod %s: %w", p.Name, err)
		}
	})
	r.expect.expectDeletes(refOf(job), deleted, r.Clock.Now())
	if len(deleted) > 0 {
		r.eventf(job, corev1.EventTypeNormal, "SuccessfulDeletePod", "Delete", "Deleted %d pods (%s): %s", len(deleted), why, listNames(podNames(sortPods(deleted))))
	}
	if err != nil {
		r.eventf(job, corev1.EventTypeWarning, "FailedDeletePod", "Delete", "%v", err)
	}
	return err
}

// forEach runs fn on every pod in parallel, bounded by the reconciler's
// slots, which all jobs share so the API server sees a bounded load however
// many jobs reconcile at once.
func (r *PaddleJobReconciler) forEach(ctx context.Context, pods []*corev1.Pod, fn func(*corev1.Pod) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(pods))
	for i, p := range pods {
		select {
		case r.slots <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-r.slots }()
			errs[i] = fn(p)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
