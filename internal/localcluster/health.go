package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/paddlejob/paddlejob/internal/kube"
)

// waitFor polls check until it succeeds, ctx ends or timeout passes; the
// error then says what the last check said.
func waitFor(ctx context.Context, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		var stop stopWaitingError
		if errors.As(last, &stop) {
			return stop.err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// dialTLS checks that a TLS listener answers on 127.0.0.1:port.
func dialTLS(port int) error {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// getOK GETs a path of the API server and expects 200.
func getOK(ctx context.Context, cfg *rest.Config, path string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
	return err
}

// getInsecure GETs a loopback health endpoint served with a self-signed
// certificate (the scheduler's and controller manager's).
func getInsecure(ctx context.Context, port int, path string) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health check of a process we started
	}}
	return getWith(ctx, client, fmt.Sprintf("https://127.0.0.1:%d%s", port, path))
}

func getPlain(ctx context.Context, url string) error {
	return getWith(ctx, &http.Client{Timeout: 2 * time.Second}, url)
}

func getWith(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

func nodeReady(ctx context.Context, cfg *rest.Config, name string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return nodeReadyWith(ctx, cs, name)
}

// nodeReadyWith is nodeReady with a clientset.
func nodeReadyWith(ctx context.Context, cs kubernetes.Interface, name string) error {
	node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ready := false
	for _, c := range node.Status.Conditions {
		ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	}
	if !ready {
		return fmt.Errorf("node %s is not Ready", name)
	}
	// The controller manager taints a node it has not seen Ready; until it
	// lifts the taint the scheduler leaves pods Pending ("untolerated
	// taint"), which a user's first job must not show.
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return fmt.Errorf("node %s is Ready but keeps the taint %s until the controller manager sees it so", name, t.Key)
		}
	}
	return nil
}

// ensureServiceAccount creates a ServiceAccount unless it exists.
func ensureServiceAccount(ctx context.Context, cfg *rest.Config, ns, name string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ServiceAccount %s/%s: %w", ns, name, err)
	}
	return nil
}

// healthy reports whether every process of a recorded cluster runs and its
// API server answers.
func healthy(ctx context.Context, st *State) bool {
	for _, p := range st.Processes {
		if !p.alive() {
			return false
		}
	}
	cfg, err := kube.LoadConfig(st.Kubeconfig(), "")
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return getOK(ctx, cfg, "/readyz") == nil
}

func loadAdmin(st *State) (*rest.Config, error) { return kube.LoadConfig(st.Kubeconfig(), "") }

// stopWaiting marks a check's error as final: waiting longer cannot help.
func stopWaiting(err error) error { return stopWaitingError{err} }

type stopWaitingError struct{ err error }

func (e stopWaitingError) Error() string { return e.err.Error() }

// tailFile is the last n lines of a file, for error messages.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}
