package dashboard

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// follower keeps a cache of the objects a list-watch returns, as an
// informer does: it lists, then watches, and lists again when a watch
// cannot resume, so a dropped connection or an expired resource version
// costs one list and loses nothing.
type follower struct {
	informer cache.SharedIndexInformer
}

// followHandlers are told of a follower's changes and errors.
type followHandlers struct {
	// changed is called, from the informer's goroutine, with the object
	// added, updated or deleted (a cache.DeletedFinalStateUnknown for a
	// deletion the watch missed).
	changed func(obj any, deleted bool)
	// failed is called when a list or watch fails; the informer retries
	// with a backoff.
	failed func(err error)
}

// follow starts following lw's objects of obj's type until ctx ends.
func follow(ctx context.Context, lw cache.ListerWatcher, obj runtime.Object, h followHandlers) *follower {
	inf := cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { h.changed(o, false) },
		UpdateFunc: func(_, o any) { h.changed(o, false) },
		DeleteFunc: func(o any) { h.changed(o, true) },
	})
	if h.failed != nil {
		// The browser shows the error instead of klog's log lines.
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) { h.failed(err) })
	}
	go inf.RunWithContext(ctx)
	return &follower{informer: inf}
}

func (f *follower) synced() bool { return f.informer.HasSynced() }

func (f *follower) list() []any { return f.informer.GetStore().List() }

// listWatch is a list-watch of one function pair with a field selector,
// e.g. a clientset's Events(ns).List and .Watch.
func listWatch(fieldSelector string,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = fieldSelector
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fieldSelector
			return watchFn(ctx, o)
		},
	}
}

// lasting says whether an error will not go away by retrying alone: the
// user lacks the permission, or the credentials are refused.
func lasting(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err)
}

// batchInterval is how long changes are gathered before they are sent: a
// job's status write and its pods' changes arrive together, and a
// thousand jobs' changes are one message, not a thousand.
const batchInterval = 200 * time.Millisecond
