package client

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
)

// Client talks to one cluster. It reads straight from the API server.
type Client struct {
	config *rest.Config
	c      ctrlclient.WithWatch
	cs     kubernetes.Interface
}

// New returns a client for a cluster. The API server's warnings (a
// deprecated field, say) go to stderr as kubectl prints them, unless cfg
// has a warning handler of its own.
func New(cfg *rest.Config) (*Client, error) {
	if cfg.WarningHandler == nil && cfg.WarningHandlerWithContext == nil {
		cfg = rest.CopyConfig(cfg)
		cfg.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	}
	c, err := ctrlclient.NewWithWatch(cfg, ctrlclient.Options{Scheme: kube.Scheme})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{config: cfg, c: c, cs: cs}, nil
}

// NewForClients returns a client that talks through c and cs, such as
// controller-runtime's and client-go's fakes in a unit test of code that
// uses the SDK. Config returns cfg, which may be nil.
func NewForClients(cfg *rest.Config, c ctrlclient.WithWatch, cs kubernetes.Interface) *Client {
	return &Client{config: cfg, c: c, cs: cs}
}

// NewFromKubeconfig returns a client the way kubectl finds its cluster: the
// kubeconfig file (else $KUBECONFIG, ~/.kube/config, in-cluster) and context
// (else the current one).
func NewFromKubeconfig(kubeconfig, context string) (*Client, error) {
	cfg, err := kube.LoadConfig(kubeconfig, context)
	if err != nil {
		return nil, err
	}
	return New(cfg)
}

// Config is the client's REST configuration.
func (c *Client) Config() *rest.Config { return c.config }

// Clientset is the client's Kubernetes clientset.
func (c *Client) Clientset() kubernetes.Interface { return c.cs }

// Create creates a job, validating its fields strictly (a misspelled field
// is an error, as with kubectl's default validation).
func (c *Client) Create(ctx context.Context, job *paddlev1.PaddleJob) (*paddlev1.PaddleJob, error) {
	job = job.DeepCopy()
	if job.Namespace == "" {
		job.Namespace = metav1.NamespaceDefault
	}
	if err := c.c.Create(ctx, job, ctrlclient.FieldValidation("Strict")); err != nil {
		return nil, fmt.Errorf("creating PaddleJob %s/%s: %w", job.Namespace, job.Name, err)
	}
	return job, nil
}

// Get returns a job.
func (c *Client) Get(ctx context.Context, namespace, name string) (*paddlev1.PaddleJob, error) {
	job := &paddlev1.PaddleJob{}
	if err := c.c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, job); err != nil {
		return nil, fmt.Errorf("getting PaddleJob %s/%s: %w", namespace, name, err)
	}
	return job, nil
}

// List returns the jobs of a namespace ("" for all), sorted by namespace and name.
func (c *Client) List(ctx context.Context, namespace string) ([]paddlev1.PaddleJob, error) {
	var list paddlev1.PaddleJobList
	if err := c.c.List(ctx, &list, ctrlclient.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing PaddleJobs: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return list.Items, nil
}

// Delete deletes a job; its pods, Service and ConfigMap go with it.
func (c *Client) Delete(ctx context.Context, namespace, name string) error {
	job := &paddlev1.PaddleJob{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.c.Delete(ctx, job, ctrlclient.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return fmt.Errorf("deleting PaddleJob %s/%s: %w", namespace, name, err)
	}
	return nil
}

// Scale sets the replicas of a role of a running job.
func (c *Client) Scale(ctx context.Context, namespace, name string, role paddlev1.ReplicaType, replicas int32) (*paddlev1.PaddleJob, error) {
	job, err := c.Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if job.Spec.Replicas(role) == nil {
		return nil, fmt.Errorf("PaddleJob %s/%s has no %s role to scale", namespace, name, role)
	}
	patch := ctrlclient.MergeFrom(job.DeepCopy())
	job.Spec.Replicas(role).Replicas = replicas
	if err := c.c.Patch(ctx, job, patch); err != nil {
		return nil, fmt.Errorf("scaling %s of PaddleJob %s/%s to %d: %w", role, namespace, name, replicas, err)
	}
	return job, nil
}

// Pods returns the pods of a job, sorted by role (ps, worker, heter) and index.
func (c *Client) Pods(ctx context.Context, namespace, name string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := c.c.List(ctx, &list, ctrlclient.InNamespace(namespace), ctrlclient.MatchingLabels{paddlev1.LabelJobName: name}); err != nil {
		return nil, fmt.Errorf("listing pods of PaddleJob %s/%s: %w", namespace, name, err)
	}
	SortPods(list.Items)
	return list.Items, nil
}

// Events returns the events about an object, oldest first.
func (c *Client) Events(ctx context.Context, namespace string, uid types.UID) ([]corev1.Event, error) {
	list, err := c.cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(uid)})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(list.Items, func(i, j int) bool { return EventTime(list.Items[i]).Before(EventTime(list.Items[j])) })
	return list.Items, nil
}

// EventTime is when an event last happened, whichever API wrote it.
func EventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// SortPods orders pods by role (ps, worker, heter) then index
// (paddlev1.ComparePods); pods of no role come last.
func SortPods(pods []corev1.Pod) {
	slices.SortStableFunc(pods, func(a, b corev1.Pod) int { return paddlev1.ComparePods(&a, &b) })
}
