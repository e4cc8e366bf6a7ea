package main

// The cluster under test: a kube-apiserver and etcd the harness starts
// (envtest, with the PaddleJob CRD installed; no scheduler, controller-manager
// or node), or an existing cluster named by --kubeconfig. And the harness's
// own clients of it.

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

// controlPlane is the cluster the benchmark runs against.
type controlPlane struct {
	Config *rest.Config
	// Kubeconfig is a file the controller under test reads.
	Kubeconfig string
	// Started is true when the harness started (and will stop) the cluster.
	Started     bool
	Description string
	env         *testenv.Env
}

// startControlPlane connects to the cluster of kubeconfig, or, when it is
// empty, starts etcd and kube-apiserver and writes a kubeconfig for them in
// dir.
func startControlPlane(kubeconfig, dir string) (*controlPlane, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", kubeconfig, err)
		}
		abs, err := filepath.Abs(kubeconfig)
		if err != nil {
			return nil, err
		}
		return &controlPlane{Config: cfg, Kubeconfig: abs, Description: "existing cluster at " + cfg.Host}, nil
	}
	env, err := testenv.Start()
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{
		Config: env.Config, Started: true, env: env,
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
		Description: fmt.Sprintf("envtest: kube-apiserver %s and etcd %s on 127.0.0.1, no scheduler, controller-manager or node",
			kubebin.KubernetesVersion, kubebin.EtcdVersion),
	}
	if err := writeKubeconfig(env.Config, cp.Kubeconfig); err != nil {
		_ = cp.stop()
		return nil, err
	}
	return cp, nil
}

func (cp *controlPlane) stop() error {
	if !cp.Started {
		return nil
	}
	if err := cp.env.Stop(); err != nil {
		return fmt.Errorf("stopping the control plane: %w", err)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig with cfg's server and client
// certificate.
func writeKubeconfig(cfg *rest.Config, path string) error {
	const name = "benchscale"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		CertificateAuthority:     cfg.CAFile,
		InsecureSkipTLSVerify:    cfg.Insecure,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientCertificate:     cfg.CertFile,
		ClientKeyData:         cfg.KeyData,
		ClientKey:             cfg.KeyFile,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing the kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// clients are the harness's clients. Every request they send is counted, so
// it can be told apart from the operator's.
type clients struct {
	// admin watches, cleans up and reads metrics, fast enough never to be
	// the bottleneck.
	admin    kubernetes.Interface
	adminDyn dynamic.Interface
	// creator creates the jobs and the direct reference's pods, with the
	// settings of the reference (--client-qps, --client-burst).
	creator    kubernetes.Interface
	creatorDyn dynamic.Interface
	// kubelet writes pod status (--kubelet-qps).
	kubelet kubernetes.Interface
	counter *requestCounter
}

type clientSettings struct {
	CreatorQPS   float32
	CreatorBurst int
	KubeletQPS   float32
}

func newClients(base *rest.Config, s clientSettings) (*clients, error) {
	c := &clients{counter: newRequestCounter()}
	mk := func(qps float32, burst int, agent string) *rest.Config {
		cfg := rest.CopyConfig(base)
		cfg.QPS, cfg.Burst = qps, burst
		cfg.UserAgent = "benchscale-" + agent
		cfg.Wrap(c.counter.wrap)
		return cfg
	}
	// Built-in types travel as protobuf, as controller-runtime sends them.
	proto := func(cfg *rest.Config) *rest.Config {
		cfg = rest.CopyConfig(cfg)
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		return cfg
	}
	admin := mk(10000, 10000, "admin")
	creator := mk(s.CreatorQPS, s.CreatorBurst, "creator")
	kubelet := mk(s.KubeletQPS, int(s.KubeletQPS), "kubelet")
	var err error
	if c.admin, err = kubernetes.NewForConfig(proto(admin)); err != nil {
		return nil, err
	}
	if c.adminDyn, err = dynamic.NewForConfig(admin); err != nil {
		return nil, err
	}
	if c.creator, err = kubernetes.NewForConfig(proto(creator)); err != nil {
		return nil, err
	}
	if c.creatorDyn, err = dynamic.NewForConfig(creator); err != nil {
		return nil, err
	}
	if c.kubelet, err = kubernetes.NewForConfig(proto(kubelet)); err != nil {
		return nil, err
	}
	return c, nil
}
