package main

import (
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/localcluster/etcdguard"
)

func init() { register(newElasticEtcdGuardCmd) }

// newElasticEtcdGuardCmd runs the local cluster's elastic etcd guard: the
// port pods and the operator are given as the elastic etcd's, forwarding
// only the calls of Paddle's elastic rendezvous to the real etcd.
func newElasticEtcdGuardCmd() *cobra.Command {
	var listen, etcd, kubeconfig string
	cmd := &cobra.Command{
		Use:    "elastic-etcd-guard --listen HOST:PORT --etcd TARGET --kubeconfig FILE",
		Short:  "Serve the elastic etcd's key-value, watch and lease calls, refusing the others",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return etcdguard.Serve(ctx, listen, etcd, kubeconfig, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to serve on, host:port")
	cmd.Flags().StringVar(&etcd, "etcd", "", "gRPC target of the etcd behind the guard, e.g. unix:///path/to/socket")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of a user who may list and watch pods: the guard tells a forwarded caller's PaddleJob by the pods at its address (without it, it refuses every forwarded caller)")
	_ = cmd.MarkFlagRequired("listen")
	_ = cmd.MarkFlagRequired("etcd")
	return cmd
}
