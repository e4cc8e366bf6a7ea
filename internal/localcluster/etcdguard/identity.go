package etcdguard

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Who calls: the guard knows a caller by the address its connection came
// from, which the cluster network's forward tells it (clientaddr.go) and
// which a pod cannot choose: a pod's packets leave its namespace with its
// own IP (it holds no capability to change it) and the cluster network
// drops a node's packets from any address not its own or its pods'. That
// address is a pod's IP, or a node's for hostNetwork pods; the API server's
// pods say whose it is, and a pod's PaddleJob is its controller.

// paddleJobAPIVersion is the PaddleJob owner references' API version.
const paddleJobAPIVersion = "batch.paddlepaddle.org/v1"

// Identities find the scope of the pods at an address.
type Identities interface {
	ScopeOf(ctx context.Context, ip netip.Addr) (Scope, error)
}

// scopeOfPods decides the scope of a caller from the pods that hold its
// address, still running or about to: all of them must belong to one
// PaddleJob. A pod IP is one pod's; a node IP is every hostNetwork pod's
// of that node, so one pod of another job, or of none, there makes the
// address no job's.
func scopeOfPods(ip netip.Addr, pods []*corev1.Pod) (Scope, error) {
	var scope *Scope
	var others []string
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.Kind != "PaddleJob" || ref.APIVersion != paddleJobAPIVersion {
			others = append(others, p.Namespace+"/"+p.Name+" (of no PaddleJob)")
			continue
		}
		s := JobScope(p.Namespace, ref.Name, string(ref.UID))
		switch {
		case scope == nil:
			scope = &s
		case scope.Job != s.Job || scope.Prefixes[0] != s.Prefixes[0]:
			others = append(others, p.Namespace+"/"+p.Name+" (of PaddleJob "+s.Job+")")
		}
	}
	if scope == nil {
		return Scope{}, fmt.Errorf("no pod of a PaddleJob has the address %s", ip)
	}
	if len(others) > 0 {
		sort.Strings(others)
		return Scope{}, fmt.Errorf("the address %s is PaddleJob %s's and also %s's (hostNetwork pods share their node's)", ip, scope.Job, strings.Join(others, ", "))
	}
	return *scope, nil
}

// podIPIndex indexes pods by status.podIP.
const podIPIndex = "podIP"

// PodIdentities finds callers' pods in an informer's cache of every pod.
type PodIdentities struct {
	pods cache.SharedIndexInformer
	// lag is addressLag, shorter in tests.
	lag time.Duration
}

// NewPodIdentities watches every pod through client until ctx ends.
func NewPodIdentities(ctx context.Context, client kubernetes.Interface) (*PodIdentities, error) {
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Core().V1().Pods().Informer()
	if err := inf.AddIndexers(cache.Indexers{podIPIndex: func(obj any) ([]string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Status.PodIP == "" {
			return nil, nil
		}
		return []string{p.Status.PodIP}, nil
	}}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	return &PodIdentities{pods: inf, lag: addressLag}, nil
}

// addressLag bounds the wait for a caller's pod to show its address: a
// container may start, and call, before the node's status update giving
// its pod the IP has reached the guard's cache.
const addressLag = 10 * time.Second

// ScopeOf is the scope of the pods at ip, once the cache has every pod.
// An address no pod has yet is looked up again for up to addressLag.
func (p *PodIdentities) ScopeOf(ctx context.Context, ip netip.Addr) (Scope, error) {
	if !cache.WaitForCacheSync(ctx.Done(), p.pods.HasSynced) {
		return Scope{}, fmt.Errorf("the guard has not read the cluster's pods yet: %w", ctx.Err())
	}
	var scope Scope
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, p.lag, true, func(context.Context) (bool, error) {
		pods, err := p.podsAt(ip)
		if err != nil {
			return false, err
		}
		scope, lastErr = scopeOfPods(ip, pods)
		// Only an address no pod holds may be one whose pod's status is
		// still on its way; any other answer is final.
		return len(pods) > 0, nil
	})
	if err != nil && lastErr == nil {
		return Scope{}, err
	}
	return scope, lastErr
}

// podsAt are the cached pods whose status.podIP is ip.
func (p *PodIdentities) podsAt(ip netip.Addr) ([]*corev1.Pod, error) {
	objs, err := p.pods.GetIndexer().ByIndex(podIPIndex, ip.String())
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}
