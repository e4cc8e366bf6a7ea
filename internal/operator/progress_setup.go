package operator

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/paddlejob/paddlejob/internal/operator/progress"
)

// ProgressServiceName is the Service pods reach the progress endpoint by
// (the Helm chart's and config/manager's).
const ProgressServiceName = "paddlejob-progress"

// baseURL is the endpoint's URL as pods reach it.
func (p ProgressOptions) baseURL(namespace string) (string, error) {
	if p.URL != "" {
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("--progress-url %q: want http(s)://host[:port]", p.URL)
		}
		return strings.TrimRight(p.URL, "/"), nil
	}
	_, port, err := net.SplitHostPort(p.Addr)
	if err != nil || port == "" || port == "0" {
		return "", fmt.Errorf("--progress-bind-address %q: want [host]:port (a fixed port, which pods reach through the %s Service)", p.Addr, ProgressServiceName)
	}
	return fmt.Sprintf("http://%s.%s.svc:%s", ProgressServiceName, namespace, port), nil
}

// setupProgress runs the progress endpoint on every replica (a standby
// refuses reports, so the reporter retries towards the leader), the
// history writer on the leader, and the progress gauges.
func setupProgress(mgr ctrl.Manager, cfg *rest.Config, store *progress.Store, addr string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	srv := &progress.Server{
		Store:   store,
		Reviews: cs.AuthenticationV1().TokenReviews(),
		Reader:  mgr.GetCache(),
		Leading: func() bool {
			select {
			case <-mgr.Elected():
				return true
			default:
				return false
			}
		},
	}
	progress.CollectFrom(store)
	if err := mgr.Add(everyReplica(func(ctx context.Context) error { return srv.Serve(ctx, addr) })); err != nil {
		return err
	}
	return mgr.Add(&progress.HistoryWriter{
		Store: store, Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("paddlejob-operator"),
	})
}
