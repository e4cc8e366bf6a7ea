package node

import (
	"context"
	"os/exec"
	"path/filepath"

	"github.com/go-logr/logr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

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

// RunNetworkServices runs what a node serves its pods beside the kubelet, for
// a node whose pods another kubelet runs (the container-runtime node): the
// Service proxy on the cluster IPs of cidrs and, when dns names a binary,
// the cluster DNS server, both in network's services namespace, until ctx
// ends. It returns once the DNS server has synced with the API server.
func RunNetworkServices(ctx context.Context, client kubernetes.Interface, network *podnetwork.NodeNetwork, cidrs serviceproxy.CIDRs, dns ClusterDNS, stateDir string, log logr.Logger) error {
	factory := informers.NewSharedInformerFactory(client, 0)
	proxy, err := newServiceProxy(log.WithName("services"), factory, cidrs, network.ServicesNamespace())
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	proxy.Start()
	context.AfterFunc(ctx, proxy.Stop)
	if dns.Binary == "" {
		return nil
	}
	ns := network.ServicesNamespace()
	s := &clusterDNSServer{
		binary: dns.Binary, ip: dns.address(), kubeconfig: dns.Kubeconfig,
		dir:   filepath.Join(stateDir, "cluster-dns"),
		start: func(cmd *exec.Cmd) error { return ns.Do(cmd.Start) },
		dial:  ns.DialContext,
		log:   log.WithName("cluster-dns"),
	}
	if err := s.run(ctx); err != nil {
		return err
	}
	return s.awaitReady(ctx, clusterDNSStartTimeout)
}
