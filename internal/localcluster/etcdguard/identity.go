package etcdguard

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	return &PodIdentities{pods: inf}, nil
}

// ScopeOf is the scope of the pods at ip, once the cache has every pod.
func (p *PodIdentities) ScopeOf(ctx context.Context, ip netip.Addr) (Scope, error) {
	if !cache.WaitForCacheSync(ctx.Done(), p.pods.HasSynced) {
		return Scope{}, fmt.Errorf("the guard has not read the cluster's pods yet: %w", ctx.Err())
	}
	objs, err := p.pods.GetIndexer().ByIndex(podIPIndex, ip.String())
	if err != nil {
		return Scope{}, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	return scopeOfPods(ip, pods)
}
