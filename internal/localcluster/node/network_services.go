package node

import (
	"context"
	"sync"

	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
)

// startNetworkServices starts the node's Service proxy, its attachment to
// the cluster network when a ClusterNetworkSocket is configured, and when it
// runs one the cluster DNS server, which it waits for: pods started before
// it answers would not resolve their peers. The returned stop ends them all.
func (n *Node) startNetworkServices(ctx context.Context) (stop func(), err error) {
	n.services.Start()
	attachCtx, stopAttach := context.WithCancel(ctx)
	var attached sync.WaitGroup
	if n.cfg.ClusterNetworkSocket != "" {
		attached.Add(1)
		go func() {
			defer attached.Done()
			podnetwork.AttachNode(attachCtx, n.cfg.ClusterNetworkSocket, n.network.Config().NodeIP, n.network.Uplink(), n.log.WithName("uplink"))
		}()
	}
	dnsCtx, stopDNS := context.WithCancel(ctx)
	stop = func() { stopDNS(); stopAttach(); attached.Wait(); n.services.Stop() }
	dns, err := n.startClusterDNS(dnsCtx)
	if err == nil && dns != nil {
		err = dns.awaitReady(ctx, clusterDNSStartTimeout)
	}
	if err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}
