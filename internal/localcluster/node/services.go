package node

import (
	"github.com/go-logr/logr"
	"k8s.io/client-go/informers"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
	"github.com/paddlejob/paddlejob/internal/localcluster/serviceproxy"
)

// newServiceProxy makes the node's Service proxy (docs/local-node.md#services)
// on the factory's Service and EndpointSlice informers: it serves the
// cluster IPs of cidrs, listening and dialling in the node's network
// namespace, where cluster IPs are local and pods reachable over the bridge.
func newServiceProxy(log logr.Logger, factory informers.SharedInformerFactory, cidrs serviceproxy.CIDRs, ns *podnetwork.Namespace) (*serviceproxy.Proxy, error) {
	services := factory.Core().V1().Services()
	slices := factory.Discovery().V1().EndpointSlices()
	proxy := serviceproxy.New(serviceproxy.Config{
		Log:            log,
		Services:       services.Lister(),
		EndpointSlices: slices.Lister(),
		Synced:         func() bool { return services.Informer().HasSynced() && slices.Informer().HasSynced() },
		Eligible:       cidrs.Contains,
		Network:        ns,
	})
	if _, err := services.Informer().AddEventHandler(proxy.Handler()); err != nil {
		return nil, err
	}
	return proxy, nil
}
