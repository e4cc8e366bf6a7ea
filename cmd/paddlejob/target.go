package main

import (
	"io"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// targetFlags choose the cluster a job command talks to, exactly as kubectl
// chooses it: --kubeconfig, else $KUBECONFIG, else ~/.kube/config; --context,
// else the current context; -n, else the context's namespace, else default.
// `paddlejob up` makes the local cluster the current context.
type targetFlags struct {
	kubeconfig string
	context    string
	namespace  string

	resolved *kube.Target
}

func (t *targetFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, as kubectl)")
	cmd.Flags().StringVar(&t.context, "context", "", "kubeconfig context to use (default: the current one; paddlejob up makes the local cluster's current)")
	cmd.Flags().StringVarP(&t.namespace, "namespace", "n", "", "namespace (default: the manifest's, else the context's, else default)")
}

// resolve reads the kubeconfig for the target cluster, without contacting it.
func (t *targetFlags) resolve() (*kube.Target, error) {
	if t.resolved == nil {
		tgt, err := kube.LoadTarget(t.kubeconfig, t.context)
		if err != nil {
			return nil, err
		}
		t.resolved = tgt
	}
	return t.resolved, nil
}

// client connects to the target cluster; it fails with one error naming
// the context and server when the cluster cannot be reached, before the
// command does anything.
func (t *targetFlags) client(cmd *cobra.Command) (*client.Client, error) {
	// client-go's own logging (retries, throttling) is noise to a user; the
	// errors it ends in are reported, and the API server's warnings still
	// show (rest.WarningHandler).
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	tgt, err := t.resolve()
	if err != nil {
		return nil, err
	}
	if err := tgt.Reachable(cmd.Context()); err != nil {
		return nil, err
	}
	return client.New(tgt.Config)
}

// ns is the namespace to use when the object leaves it open: -n, else the
// context's, else default.
func (t *targetFlags) ns() string {
	if t.namespace != "" {
		return t.namespace
	}
	if tgt, err := t.resolve(); err == nil {
		return tgt.Namespace
	}
	return "default"
}

// where names the cluster a command acts on, for the commands that change
// something to say so.
func (t *targetFlags) where() string {
	if tgt, err := t.resolve(); err == nil {
		return tgt.String()
	}
	return "no cluster"
}
