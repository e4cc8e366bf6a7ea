package etcdguard

import (
	"context"
	"fmt"
	"io"
	"net"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Serve runs the guard on listen (host:port) in front of the etcd at
// target until ctx ends. It tells forwarded callers' jobs by the pods the
// API server of kubeconfig lists; without one it refuses them all.
func Serve(ctx context.Context, listen, target, kubeconfig string, log io.Writer) error {
	backend, err := Dial(target)
	if err != nil {
		return fmt.Errorf("etcd at %s: %w", target, err)
	}
	defer backend.Close()
	var identities Identities
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		cfg.UserAgent = "paddlejob-elastic-etcd-guard"
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		if identities, err = NewPodIdentities(ctx, client); err != nil {
			return err
		}
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := NewServer(backend, identities, log)
	go func() {
		<-ctx.Done()
		// Watches and lease keep-alives never end by themselves: a
		// graceful stop would wait for them forever.
		srv.Stop()
	}()
	fmt.Fprintf(log, "etcdguard: serving %s, forwarding to %s\n", lis.Addr(), target)
	if err := srv.Serve(lis); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// readyKey is the key Ready reads: any key proves the path.
const readyKey = "paddlejob/etcdguard/ready"

// Ready reports whether a call through the guard at addr reaches etcd: a
// Range of one key, which etcd answers even when the key is absent.
func Ready(ctx context.Context, addr string) error {
	conn, err := Dial(addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	// RangeRequest{key: readyKey}: field 1, length-delimited.
	req := &frame{data: append([]byte{0x0a, byte(len(readyKey))}, readyKey...)}
	return conn.Invoke(ctx, "/etcdserverpb.KV/Range", req, &frame{})
}
