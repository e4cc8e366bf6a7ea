package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Selecting, watching, suspending and deleting jobs as kubectl's verbs do.

// ListSelected returns the jobs of a namespace ("" for all) whose labels
// match selector (kubectl's -l syntax; "" matches every job), sorted by
// namespace and name, with the list's resourceVersion to watch from.
func (c *Client) ListSelected(ctx context.Context, namespace, selector string) ([]paddlev1.PaddleJob, string, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, "", fmt.Errorf("label selector %q: %w", selector, err)
	}
	var list paddlev1.PaddleJobList
	if err := c.c.List(ctx, &list, ctrlclient.InNamespace(namespace), ctrlclient.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, "", fmt.Errorf("listing PaddleJobs: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return list.Items, list.ResourceVersion, nil
}

// WatchJobs watches the jobs of a namespace ("" for all) matching selector
// from resourceVersion on; name, when set, watches that job alone. The
// events' objects are *PaddleJob. The API server ends a watch after a
// while: watch again from the last object's resourceVersion.
func (c *Client) WatchJobs(ctx context.Context, namespace, name, selector, resourceVersion string) (watch.Interface, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("label selector %q: %w", selector, err)
	}
	raw := &metav1.ListOptions{ResourceVersion: resourceVersion, AllowWatchBookmarks: false}
	if name != "" {
		raw.FieldSelector = "metadata.name=" + name
	}
	w, err := c.c.Watch(ctx, &paddlev1.PaddleJobList{}, ctrlclient.InNamespace(namespace),
		ctrlclient.MatchingLabelsSelector{Selector: sel}, &ctrlclient.ListOptions{Raw: raw})
	if err != nil {
		return nil, fmt.Errorf("watching PaddleJobs: %w", err)
	}
	return w, nil
}

// ErrQueuedByKueue is the error of resuming a job that Kueue queues (label
// kueue.x-k8s.io/queue-name): Kueue resumes it when it admits it.
var ErrQueuedByKueue = errors.New("queued by Kueue")

// SetSuspended suspends a job (its pods are deleted, the job stays) or
// resumes it (its pods are created again), as spec.suspend does. A job
// Kueue queues is not resumed: ErrQueuedByKueue.
func (c *Client) SetSuspended(ctx context.Context, namespace, name string, suspend bool) (*paddlev1.PaddleJob, error) {
	job, err := c.Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if q := job.KueueQueueName(); q != "" && !suspend {
		return nil, fmt.Errorf("PaddleJob %s/%s is %w (queue %s): Kueue resumes it when it admits it", namespace, name, ErrQueuedByKueue, q)
	}
	patch := ctrlclient.MergeFrom(job.DeepCopy())
	job.Spec.Suspend = &suspend
	if err := c.c.Patch(ctx, job, patch); err != nil {
		verb := "resuming"
		if suspend {
			verb = "suspending"
		}
		return nil, fmt.Errorf("%s PaddleJob %s/%s: %w", verb, namespace, name, err)
	}
	return job, nil
}

// WaitDeleted waits until a job and its pods are gone; a zero timeout waits
// as long as ctx allows.
func (c *Client) WaitDeleted(ctx context.Context, namespace, name string, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	err := c.Watch(ctx, namespace, name, func(s Snapshot) (bool, error) {
		return s.Job == nil && len(s.Pods) == 0, nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s waiting for PaddleJob %s/%s and its pods to be deleted", timeout, namespace, name)
	}
	return err
}

// IsNotFound reports whether err says the job (or object) does not exist.
func IsNotFound(err error) bool { return apierrors.IsNotFound(err) }

// DryRun has the API server check a PaddleJob as it would create it — its
// schema with strict field validation, the operator's admission webhook —
// without storing it. The server's warnings go where the client's do.
func (c *Client) DryRun(ctx context.Context, obj *unstructured.Unstructured, namespace string) error {
	obj = obj.DeepCopy()
	if obj.GetNamespace() == "" {
		obj.SetNamespace(namespace)
	}
	if err := c.c.Create(ctx, obj, ctrlclient.DryRunAll, ctrlclient.FieldValidation("Strict")); err != nil {
		return fmt.Errorf("PaddleJob %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
