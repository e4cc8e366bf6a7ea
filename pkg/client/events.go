package client

import (
	"context"
	"fmt"
	"regexp"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// JobEvents are the events of a namespace ("" for all) about the jobs
// named and their pods, oldest first; with no name, about every job of the
// namespace (deleted ones included) and the pods of those that exist.
func (c *Client) JobEvents(ctx context.Context, namespace string, names ...string) ([]corev1.Event, error) {
	filter, err := c.JobEventFilter(ctx, namespace, names...)
	if err != nil {
		return nil, err
	}
	list, err := c.cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if filter.Matches(&e) {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return EventTime(out[i]).Before(EventTime(out[j])) })
	return out, nil
}

// JobEventFilter selects the events about jobs and their pods.
type JobEventFilter struct {
	// Jobs are the jobs whose events, and whose pods' events, match.
	Jobs map[types.NamespacedName]bool
	// AllJobs matches the events of every PaddleJob too.
	AllJobs bool
}

// JobEventFilter is the filter of JobEvents: the jobs named in namespace,
// or every job there when none is.
func (c *Client) JobEventFilter(ctx context.Context, namespace string, names ...string) (JobEventFilter, error) {
	f := JobEventFilter{Jobs: map[types.NamespacedName]bool{}, AllJobs: len(names) == 0}
	for _, n := range names {
		f.Jobs[types.NamespacedName{Namespace: namespace, Name: n}] = true
	}
	if f.AllJobs {
		jobs, err := c.List(ctx, namespace)
		if err != nil {
			return f, err
		}
		for _, j := range jobs {
			f.Jobs[types.NamespacedName{Namespace: j.Namespace, Name: j.Name}] = true
		}
	}
	return f, nil
}

// WatchEvents watches a namespace's events ("" for all) from
// resourceVersion on ("": from now); filter them with IsJobEvent.
func (c *Client) WatchEvents(ctx context.Context, namespace, resourceVersion string) (watch.Interface, error) {
	opts := metav1.ListOptions{ResourceVersion: resourceVersion}
	if resourceVersion == "" {
		list, err := c.cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("listing events: %w", err)
		}
		opts.ResourceVersion = list.ResourceVersion
	}
	w, err := c.cs.CoreV1().Events(namespace).Watch(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("watching events: %w", err)
	}
	return w, nil
}

// jobPodName matches the name of a job's pod: <job>-<role>-<index>.
var jobPodName = regexp.MustCompile(`^(.+)-(ps|worker|heter)-[0-9]+$`)

// Matches reports whether an event is about one of the jobs or their pods,
// which are known by their names: the events of a deleted pod outlive it.
func (f JobEventFilter) Matches(e *corev1.Event) bool {
	o := e.InvolvedObject
	switch {
	case o.Kind == "PaddleJob" && (o.APIVersion == paddlev1.GroupVersion.String() || o.APIVersion == ""):
		return f.AllJobs || f.Jobs[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}]
	case o.Kind == "Pod" && (o.APIVersion == "v1" || o.APIVersion == ""):
		m := jobPodName.FindStringSubmatch(o.Name)
		return m != nil && f.Jobs[types.NamespacedName{Namespace: o.Namespace, Name: m[1]}]
	}
	return false
}
