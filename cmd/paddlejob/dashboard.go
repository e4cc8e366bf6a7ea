package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/dashboard"
)

func init() { register(newDashboardCmd) }

func newDashboardCmd() *cobra.Command {
	var (
		t             targetFlags
		allNamespaces bool
		address       string
		port          int
		allowRemote   bool
	)
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a web UI of the PaddleJobs: live phases, pods, logs and training curves",
		Long: `Serve a web UI of the cluster's PaddleJobs on this machine and print its URL
(open it in a browser; nothing is opened for you). It reads the cluster kubectl
would (the current context, or --kubeconfig and --context) with your own
credentials, as kubectl proxy does: it needs get, list and watch on PaddleJobs,
pods, events and ConfigMaps, and pods/log, where you look, and installs nothing;
it patches or deletes a PaddleJob only when you press a button.

The jobs page lists the jobs of a namespace (or all: -A) with their phase, pods
ready, restarts, progress and ETA, updated live. A job's page shows the timeline of
its conditions and restarts, its pods and their events, a curve of each metric its
program reported (against time or step, restarts and suspensions marked), each
pod's log followed live, and its YAML; it suspends, resumes, scales (elastic jobs)
and deletes the job (docs/dashboard.md).

The URL carries a token the browser then keeps: other users of this machine and
other web sites cannot read the dashboard, nor operate jobs through it. It listens on 127.0.0.1 only, unless
--address names another address and --allow-remote says you mean it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			ln, err := dashboard.Listen(ctx, address, port, allowRemote)
			if err != nil {
				return err
			}
			c, err := t.client(cmd)
			if err != nil {
				ln.Close()
				return err
			}
			ns := t.ns()
			if allNamespaces {
				ns = ""
			}
			srv, err := dashboard.New(dashboard.Options{Client: c, Namespace: ns, Cluster: t.where()})
			if err != nil {
				ln.Close()
				return err
			}
			defer srv.Close()
			hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
			u := url.URL{Scheme: "http", Host: hostPort(ln.Addr()), Path: "/", RawQuery: url.Values{"token": {srv.Token()}}.Encode()}
			scope := "namespace " + ns
			if ns == "" {
				scope = "all namespaces"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "PaddleJob dashboard of %s, %s, with your credentials:\n\n  %s\n\nOpen it in a browser. Ctrl-C stops it.\n", t.where(), scope, u.String())
			done := make(chan error, 1)
			go func() { done <- hs.Serve(ln) }()
			select {
			case err := <-done:
				return err
			case <-ctx.Done():
			}
			srv.Close() // ends the live streams, so Shutdown need not wait for them
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return nil
		},
	}
	t.bind(cmd)
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "open the jobs page on every namespace")
	cmd.Flags().StringVar(&address, "address", "127.0.0.1", "address to listen on; one that is not loopback needs --allow-remote")
	cmd.Flags().IntVar(&port, "port", 8090, "port to listen on (0: any free port)")
	cmd.Flags().BoolVar(&allowRemote, "allow-remote", false, "listen on an --address that is not loopback: anyone who reaches it and has the URL reads the cluster with your credentials")
	return cmd
}

// hostPort is the listener's address as a URL host: localhost's IP as
// given, ::1 in brackets.
func hostPort(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return net.JoinHostPort(tcp.IP.String(), strconv.Itoa(tcp.Port))
	}
	return a.String()
}
