package main

import (
	"fmt"
	"net/netip"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/localcluster/clusternetwork"
	"github.com/paddlejob/paddlejob/internal/localcluster/podnetwork"
)

func init() { register(newClusterNetworkCmd) }

// newClusterNetworkCmd runs the local cluster's network: the namespace that
// joins the nodes' uplinks, plays the host at the nodes' network's first
// address (the forwards) and carries the API server's egress.
func newClusterNetworkCmd() *cobra.Command {
	var cfg clusternetwork.Config
	var nodesCIDR, podCIDR, serviceCIDR string
	var verbosity int
	cmd := &cobra.Command{
		Use:    "cluster-network --socket PATH --node IP,POD-CIDR,KUBELET-PORT ...",
		Short:  "Join the local cluster's nodes into one network and serve the host's endpoints to it",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.NodesCIDR, err = parsePrefixFlag("nodes-cidr", nodesCIDR); err != nil {
				return err
			}
			if cfg.PodCIDR, err = parsePrefixFlag("pod-cidr", podCIDR); err != nil {
				return err
			}
			if cfg.ServiceCIDRs, err = podnetwork.ParseCIDRs(serviceCIDR); err != nil {
				return fmt.Errorf("--service-cidr: %w", err)
			}
			cfg.Log = newLogger(cmd.ErrOrStderr(), verbosity)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return clusternetwork.Run(ctx, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Socket, "socket", "", "Unix socket where nodes attach their uplinks (required)")
	f.StringVar(&cfg.EgressSocket, "egress-socket", "", "Unix socket where the API server's egress into the cluster network is served (HTTP CONNECT to pod, Service and node IPs only); at most 107 bytes")
	f.StringVar(&nodesCIDR, "nodes-cidr", "172.18.0.0/16", "the nodes' network; the cluster network has its first address, where pods reach the forwards")
	f.StringVar(&podCIDR, "pod-cidr", "10.244.0.0/16", "every node's pods")
	f.StringVar(&serviceCIDR, "service-cidr", "10.96.0.0/16", "cluster IPs (comma-separated CIDRs), served by the nodes' Service proxies")
	f.Func("node", "IP,POD-CIDR,KUBELET-PORT of a node that may attach; may be repeated", func(v string) error {
		n, err := clusternetwork.ParseNode(v)
		if err == nil {
			cfg.Nodes = append(cfg.Nodes, n)
		}
		return err
	})
	f.Func("forward", "PORT=127.0.0.1:PORT: listen on PORT of the host address and forward every connection to that loopback address of this machine (what pods reach of it: the API server, the elastic etcd guard, the progress endpoint); may be repeated", func(v string) error {
		for _, one := range strings.Split(v, ",") {
			fw, err := clusternetwork.ParseForward(one)
			if err != nil {
				return err
			}
			cfg.Forwards = append(cfg.Forwards, fw)
		}
		return nil
	})
	f.Func("forward-naming-client", "PORT=127.0.0.1:PORT: a --forward whose every connection begins with a PROXY protocol v1 line naming the pod that made it (the elastic etcd guard tells jobs apart by it); may be repeated", func(v string) error {
		for _, one := range strings.Split(v, ",") {
			fw, err := clusternetwork.ParseForward(one)
			if err != nil {
				return err
			}
			fw.NamesClient = true
			cfg.Forwards = append(cfg.Forwards, fw)
		}
		return nil
	})
	f.IntVar(&verbosity, "v", 0, "log verbosity (higher logs more)")
	_ = cmd.MarkFlagRequired("socket")
	return cmd
}

// parsePrefixFlag parses a CIDR flag, naming it when it is not one.
func parsePrefixFlag(name, v string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(v)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("--%s %q: want an IPv4 CIDR such as 10.244.0.0/16", name, v)
	}
	return p.Masked(), nil
}
