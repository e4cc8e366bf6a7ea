package node

// The pod network as the node uses it: each pod's network namespace, made
// when its sandbox is prepared and released when no container of it will run
// again; hostNetwork pods run in the node's namespace (podnetwork package).

import (
	"fmt"
	"net/netip"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
)

// podNetworks gives pods their network namespaces.
type podNetworks interface {
	// node is the node's namespace, hostNetwork pods'.
	node() *podnetwork.Namespace
	// add makes a pod's namespace with ip.
	add(ip string) (podNetwork, error)
}

// podNetwork is one pod's network namespace.
type podNetwork interface {
	Namespace() *podnetwork.Namespace
	Close() error
}

// nodePodNetworks are the node's real pod networks, on its bridge.
type nodePodNetworks struct{ n *podnetwork.NodeNetwork }

func (p nodePodNetworks) node() *podnetwork.Namespace { return p.n.Namespace() }

func (p nodePodNetworks) add(ip string) (podNetwork, error) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return nil, fmt.Errorf("pod IP %q: %w", ip, err)
	}
	return p.n.AddPod(a)
}

// setUpNetwork gives the pod the namespace its containers run in: its own,
// holding its IP, or the node's for a hostNetwork pod. Run by prepare, which
// is retried: a namespace made by an earlier try is kept.
func (r *podRuntime) setUpNetwork() error {
	if r.netns != nil || r.deps.network == nil {
		return nil
	}
	if r.podCopy().Spec.HostNetwork {
		r.netns = r.deps.network.node()
		return nil
	}
	pn, err := r.deps.network.add(r.ip)
	if err != nil {
		return fmt.Errorf("creating the pod's network: %w", err)
	}
	r.podNet, r.netns = pn, pn.Namespace()
	return nil
}

// releaseNetwork releases the pod's namespace once its processes are gone.
func (r *podRuntime) releaseNetwork() {
	if r.podNet == nil {
		return
	}
	if err := r.podNet.Close(); err != nil {
		r.deps.log.Error(err, "Cannot release the pod's network", "pod", r.key)
	}
	r.podNet = nil
}
