package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
	certutil "k8s.io/client-go/util/cert"
)

// servingCertificate is the kubelet API's certificate: the configured pair,
// or a self-signed one kept in the state directory (made again when it does
// not cover the node IP or is about to expire).
func servingCertificate(certFile, keyFile, stateDir, nodeIP, nodeName string, now time.Time) (tls.Certificate, error) {
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("loading the kubelet serving certificate: %w", err)
		}
		return cert, nil
	}
	dir := filepath.Join(stateDir, "pki")
	certFile, keyFile = filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	if cert, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil && certCovers(cert, nodeIP, now) {
		return cert, nil
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(nodeName, []net.IP{net.ParseIP(nodeIP), net.IPv4(127, 0, 0, 1)}, []string{nodeName, "localhost"})
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generating a self-signed kubelet certificate: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

func certCovers(cert tls.Certificate, ip string, now time.Time) bool {
	leaf := cert.Leaf
	if leaf == nil {
		return false
	}
	return leaf.VerifyHostname(ip) == nil && now.Add(24*time.Hour).Before(leaf.NotAfter)
}

// serverTLSConfig serves cert; with a client CA, only clients with a
// certificate it signed (the API server's kubelet client) are let in.
func serverTLSConfig(cert tls.Certificate, clientCAFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if clientCAFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(clientCAFile)
	if err != nil {
		return nil, fmt.Errorf("reading --client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--client-ca-file %s holds no PEM certificate", clientCAFile)
	}
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	return cfg, nil
}

// kubeletHandler serves virtual-kubelet's kubelet API routes: container logs
// and the pod lists. Exec, attach, port-forward and stats answer 501.
func kubeletHandler(p *Provider, pods corev1listers.PodLister, log logr.Logger) http.Handler {
	h := api.PodHandler(api.PodHandlerConfig{
		GetContainerLogs: p.GetContainerLogs,
		GetPods:          p.GetPods,
		GetPodsFromKubernetes: func(context.Context) ([]*corev1.Pod, error) {
			return pods.List(labels.Everything())
		},
	}, false)
	vkl := newVKLogger(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(vklog.WithLogger(r.Context(), vkl)))
	})
}

// kubeletServer serves the kubelet API over TLS on a listener opened early,
// so the port is known when the Node is registered.
type kubeletServer struct {
	listener net.Listener
	server   *http.Server
}

// listenKubelet listens on addr, a loopback address of the host: no pod
// reaches it. The API server reaches it at the node IP through the node's
// egress (egressServer.hostTargets).
func listenKubelet(addr string, tlsConfig *tls.Config, log logr.Logger) (*kubeletServer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}
	return &kubeletServer{
		listener: tls.NewListener(l, tlsConfig),
		server: &http.Server{
			ReadHeaderTimeout: 30 * time.Second,
			// Failed handshakes (clients without a certificate) are routine.
			ErrorLog: stdlog.New(&logWriter{log: log.V(1)}, "", 0),
		},
	}, nil
}

func (s *kubeletServer) port() int32 { return int32(s.listener.Addr().(*net.TCPAddr).Port) }

func (s *kubeletServer) serve(h http.Handler) error {
	s.server.Handler = h
	if err := s.server.Serve(s.listener); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *kubeletServer) close() error {
	return errors.Join(s.server.Close(), ignoreClosed(s.listener.Close()))
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
