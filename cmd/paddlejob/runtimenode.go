package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/localcluster/runtimenode"
)

func init() { register(newRuntimeNodeCmd) }

// newRuntimeNodeCmd runs a container-runtime node of the local cluster: the
// real kubelet with containerd, as `paddlejob up --node-runtime=containerd`
// configures it.
func newRuntimeNodeCmd() *cobra.Command {
	var configFile string
	var verbosity int
	cmd := &cobra.Command{
		Use:    "runtime-node --config FILE",
		Short:  "Run a local cluster's container-runtime node: the kubelet with containerd and runc",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := os.ReadFile(configFile)
			if err != nil {
				return err
			}
			var cfg runtimenode.Config
			if err := json.Unmarshal(data, &cfg); err != nil {
				return fmt.Errorf("%s: %w", configFile, err)
			}
			cfg.Log = newLogger(cmd.ErrOrStderr(), verbosity)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return runtimenode.Run(ctx, cfg)
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "the node's configuration, as paddlejob up writes it (JSON)")
	cmd.Flags().IntVar(&verbosity, "v", 0, "log verbosity")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}
