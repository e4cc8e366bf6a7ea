package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Snapshot is a job and its pods at one moment. Job is nil when the job does
// not exist (yet, or any more).
type Snapshot struct {
	Job  *paddlev1.PaddleJob
	Pods []corev1.Pod
	// Unschedulable says why the scheduler cannot place pods it left
	// Pending (see WhyPending).
	Unschedulable []Unschedulable
}

// Watch calls fn with the job and its pods first and then each time either
// changes, until fn reports done, returns an error, or ctx ends. It watches
// (no polling) and survives dropped watches.
func (c *Client) Watch(ctx context.Context, namespace, name string, fn func(Snapshot) (done bool, err error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan struct{}, 1)
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal(changed) },
		UpdateFunc: func(any, any) { signal(changed) },
		DeleteFunc: func(any) { signal(changed) },
	}
	jobs, jobInformer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: c.listWatch(namespace, &paddlev1.PaddleJobList{}, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
		}),
		ObjectType: &paddlev1.PaddleJob{},
		Handler:    notify,
	})
	pods, podInformer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: c.listWatch(namespace, &corev1.PodList{}, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(labels.Set{paddlev1.LabelJobName: name}).String(),
		}),
		ObjectType: &corev1.Pod{},
		Handler:    notify,
	})
	go jobInformer.RunWithContext(ctx)
	go podInformer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), jobInformer.HasSynced, podInformer.HasSynced) {
		return fmt.Errorf("watching PaddleJob %s/%s: %w", namespace, name, context.Cause(ctx))
	}
	signal(changed)
	// Why pods stay Pending, explained again when the scheduler says more.
	var whyKey string
	var why []Unschedulable
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
		snap := Snapshot{}
		for _, o := range jobs.List() {
			// The field selector picks it; a fake client may not.
			if j := o.(*paddlev1.PaddleJob); j.Name == name {
				snap.Job = j.DeepCopy()
			}
		}
		for _, o := range pods.List() {
			p := o.(*corev1.Pod)
			// Pods of an earlier job of the same name are not this job's.
			if snap.Job != nil && !ownedBy(p, snap.Job) {
				continue
			}
			snap.Pods = append(snap.Pods, *p.DeepCopy())
		}
		SortPods(snap.Pods)
		if key := pendingKey(snap.Pods); key != whyKey {
			whyKey, why = key, c.WhyPending(ctx, snap.Pods)
		}
		snap.Unschedulable = why
		done, err := fn(snap)
		if err != nil || done {
			return err
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func ownedBy(p *corev1.Pod, job *paddlev1.PaddleJob) bool {
	ref := metav1.GetControllerOf(p)
	return ref == nil || ref.UID == job.UID
}

// JobsListWatch lists and watches the jobs of a namespace ("" for all), for
// an informer of one's own (client-go's cache) that follows many jobs.
func (c *Client) JobsListWatch(namespace string) *cache.ListWatch {
	return c.listWatch(namespace, &paddlev1.PaddleJobList{}, metav1.ListOptions{})
}

// listWatch lists and watches one kind in a namespace through the client.
func (c *Client) listWatch(namespace string, list runtime.Object, opts metav1.ListOptions) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector, o.LabelSelector = opts.FieldSelector, opts.LabelSelector
			out := list.DeepCopyObject()
			switch l := out.(type) {
			case *paddlev1.PaddleJobList:
				return l, c.c.List(ctx, l, ctrlclient.InNamespace(namespace), &ctrlclient.ListOptions{Raw: &o})
			case *corev1.PodList:
				got, err := c.cs.CoreV1().Pods(namespace).List(ctx, o)
				return got, err
			}
			return nil, fmt.Errorf("unsupported list %T", list)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector, o.LabelSelector = opts.FieldSelector, opts.LabelSelector
			o.Watch = true
			switch list.(type) {
			case *paddlev1.PaddleJobList:
				return c.c.Watch(ctx, &paddlev1.PaddleJobList{}, ctrlclient.InNamespace(namespace), &ctrlclient.ListOptions{Raw: &o})
			case *corev1.PodList:
				return c.cs.CoreV1().Pods(namespace).Watch(ctx, o)
			}
			return nil, fmt.Errorf("unsupported list %T", list)
		},
	}
}

// Condition is what WaitFor waits for.
type Condition func(*paddlev1.PaddleJob) (met bool, err error)

// ErrJobFailed is returned (wrapped, with the failure's message) by WaitFor
// when the job fails while waiting for something else.
var ErrJobFailed = errors.New("the job failed")

// Completed is met when the job completed; a failure ends the wait with
// ErrJobFailed.
func Completed(job *paddlev1.PaddleJob) (bool, error) {
	if job.Status.Phase == paddlev1.PaddleJobFailed {
		return false, failure(job)
	}
	return job.Status.Phase == paddlev1.PaddleJobCompleted, nil
}

// Finished is met when the job completed or failed.
func Finished(job *paddlev1.PaddleJob) (bool, error) { return job.Status.IsFinished(), nil }

// Running is met when every pod of the job runs (or the job already finished).
func Running(job *paddlev1.PaddleJob) (bool, error) {
	return job.Status.Phase == paddlev1.PaddleJobRunning || job.Status.IsFinished(), nil
}

// ConditionTrue is met when the job's condition of the given type is True.
func ConditionTrue(conditionType string) Condition {
	return func(job *paddlev1.PaddleJob) (bool, error) {
		return meta.IsStatusConditionTrue(job.Status.Conditions, conditionType), nil
	}
}

// WaitFor waits until cond is met and returns the job then. A zero timeout
// waits as long as ctx allows.
func (c *Client) WaitFor(ctx context.Context, namespace, name string, cond Condition, timeout time.Duration) (*paddlev1.PaddleJob, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var last *paddlev1.PaddleJob
	err := c.Watch(ctx, namespace, name, func(s Snapshot) (bool, error) {
		if s.Job == nil {
			return false, nil
		}
		last = s.Job
		return cond(s.Job)
	})
	if errors.Is(err, context.DeadlineExceeded) {
		phase := "not found"
		if last != nil {
			phase = "phase " + string(last.Status.Phase)
		}
		return last, fmt.Errorf("timed out after %s waiting for PaddleJob %s/%s (%s)", timeout, namespace, name, phase)
	}
	return last, err
}

// failure is ErrJobFailed with the job's Failed condition.
func failure(job *paddlev1.PaddleJob) error {
	if c := meta.FindStatusCondition(job.Status.Conditions, paddlev1.JobFailed); c != nil {
		return fmt.Errorf("%w: %s: %s", ErrJobFailed, c.Reason, c.Message)
	}
	return ErrJobFailed
}

// FailureMessage says why a failed job failed ("" when it has not).
func FailureMessage(job *paddlev1.PaddleJob) string {
	if job.Status.Phase != paddlev1.PaddleJobFailed {
		return ""
	}
	return failure(job).Error()
}
