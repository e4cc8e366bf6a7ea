package kube

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Target is the cluster a command acts on, resolved as kubectl resolves it:
// the kubeconfig named (else $KUBECONFIG, else ~/.kube/config), the context
// named (else the current one) and its namespace.
type Target struct {
	// Config is the client configuration.
	Config *rest.Config
	// Context is the context's name ("" in a pod, with the in-cluster
	// service account).
	Context string
	// Server is the API server's URL.
	Server string
	// Namespace is the context's namespace, else "default".
	Namespace string
}

// ErrNoCluster is wrapped by the error of a kubeconfig that names no cluster.
var ErrNoCluster = errors.New("no cluster")

// LoadTarget resolves the cluster of kubeconfig and context (either may be
// empty) without contacting it.
func LoadTarget(kubeconfig, contextName string) (*Target, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: contextName})
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			where := strings.Join(rules.GetLoadingPrecedence(), ", ")
			if kubeconfig != "" {
				where = kubeconfig
			}
			return nil, fmt.Errorf("%w: no current context in %s; start the local cluster (paddlejob up), which becomes the current context, or name one with --kubeconfig and --context", ErrNoCluster, where)
		}
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	t := &Target{Config: cfg, Server: cfg.Host, Namespace: "default"}
	if raw, err := cc.RawConfig(); err == nil {
		t.Context = raw.CurrentContext
		if contextName != "" {
			t.Context = contextName
		}
	}
	if ns, _, err := cc.Namespace(); err == nil && ns != "" {
		t.Namespace = ns
	}
	return t, nil
}

// String names the target for messages: `context "kind-a" (https://...)`.
func (t *Target) String() string {
	if t.Context == "" {
		return fmt.Sprintf("the in-cluster API server (%s)", t.Server)
	}
	return fmt.Sprintf("context %q (%s)", t.Context, t.Server)
}

// Reachable asks the API server for its version, so that a command fails
// with one clear error, naming the context and server, when the cluster
// cannot be reached, before it does anything.
func (t *Target) Reachable(ctx context.Context) error {
	cfg := rest.CopyConfig(t.Config)
	cfg.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { _, err := dc.ServerVersion(); done <- err }()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("cannot reach %s: %s", t, unreachableReason(err))
	}
	return nil
}

// unreachableReason is the gist of a failed request: the transport error
// without the request's URL repeated.
func unreachableReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
