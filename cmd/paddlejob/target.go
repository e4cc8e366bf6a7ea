package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// targetFlags choose the cluster a job command talks to.
type targetFlags struct {
	kubeconfig string
	context    string
	namespace  string
	home       string
}

func (t *targetFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster (default: the local cluster when it runs, else kubectl's)")
	cmd.Flags().StringVar(&t.context, "context", "", "kubeconfig context to use")
	cmd.Flags().StringVarP(&t.namespace, "namespace", "n", "", "namespace (default: the manifest's, else the context's, else default)")
	cmd.Flags().StringVar(&t.home, "home", localcluster.DefaultHome(), "state directory of the local cluster ($PADDLEJOB_HOME)")
}

// remote reports whether the commands talk to kubectl's cluster: the user
// named a cluster, or runs the CLI as a kubectl plugin, where the current
// context is what kubectl users expect.
func (t *targetFlags) remote() bool {
	return t.kubeconfig != "" || t.context != "" || strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-")
}

// client connects to the named cluster; else the local cluster when one runs
// (started first when start is set); else the cluster kubectl would use.
func (t *targetFlags) client(cmd *cobra.Command, start bool) (*client.Client, error) {
	if t.remote() {
		return client.NewFromKubeconfig(t.kubeconfig, t.context)
	}
	opts := localcluster.Options{Home: t.home, Out: cmd.ErrOrStderr()}
	st, err := localcluster.Running(cmd.Context(), opts)
	if err != nil && start {
		st, err = localcluster.Up(cmd.Context(), opts)
		if err != nil {
			return nil, err
		}
	}
	if err != nil {
		return client.NewFromKubeconfig("", "")
	}
	return client.NewFromKubeconfig(st.Kubeconfig(), "")
}

// ns is the namespace to use when the flag and the object leave it open.
func (t *targetFlags) ns() string {
	if t.namespace != "" {
		return t.namespace
	}
	return "default"
}
