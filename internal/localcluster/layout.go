package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/paddlejob/paddlejob/internal/fsutil"
)

// DefaultHome is $PADDLEJOB_HOME, else ~/.paddlejob: the one directory that
// holds a local cluster's state.
func DefaultHome() string {
	if h := os.Getenv("PADDLEJOB_HOME"); h != "" {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".paddlejob")
	}
	return filepath.Join(os.TempDir(), "paddlejob")
}

// layout names the files of a local cluster under its home.
type layout struct{ home string }

func (l layout) kubeconfig() string              { return filepath.Join(l.home, "kubeconfig") }
func (l layout) stateFile() string               { return filepath.Join(l.home, "cluster.json") }
func (l layout) previousContextFile() string     { return filepath.Join(l.home, "previous-context") }
func (l layout) lockFile() string                { return filepath.Join(l.home, ".lock") }
func (l layout) pki() string                     { return filepath.Join(l.home, "pki") }
func (l layout) logs() string                    { return filepath.Join(l.home, "logs") }
func (l layout) etcdData() string                { return filepath.Join(l.home, "etcd") }
func (l layout) elasticEtcdData() string         { return filepath.Join(l.home, "elastic-etcd") }
func (l layout) nodesState() string              { return filepath.Join(l.home, "nodes") }
func (l layout) nodeState(name string) string    { return filepath.Join(l.nodesState(), name) }
func (l layout) imageTable() string              { return filepath.Join(l.home, "images.yaml") }
func (l layout) imageContexts() string           { return filepath.Join(l.home, "images") }
func (l layout) componentConfig(c string) string { return filepath.Join(l.pki(), c+".kubeconfig") }

// Ports are the loopback ports a cluster listens on.
type Ports struct {
	EtcdClient        int `json:"etcdClient"`
	EtcdPeer          int `json:"etcdPeer"`
	APIServer         int `json:"apiServer"`
	Scheduler         int `json:"scheduler"`
	ControllerManager int `json:"controllerManager"`
	OperatorProbes    int `json:"operatorProbes"`
	// Kubelets are the nodes' kubelet APIs, in node order.
	Kubelets        []int `json:"kubelets"`
	ElasticEtcd     int   `json:"elasticEtcd"`
	ElasticEtcdPeer int   `json:"elasticEtcdPeer"`
	Webhook         int   `json:"webhook"`
	// The add-ons' ports, 0 for those the cluster does not run.
	Volcano          int `json:"volcano,omitempty"`
	SchedulerPlugins int `json:"schedulerPlugins,omitempty"`
	KueueWebhook     int `json:"kueueWebhook,omitempty"`
	KueueProbes      int `json:"kueueProbes,omitempty"`
	// Progress is the operator's progress endpoint, which pods report to.
	Progress int `json:"progress"`
}

// All lists every port the cluster listens on.
func (p Ports) All() []int {
	var used []int
	for _, port := range []int{p.EtcdClient, p.EtcdPeer, p.APIServer, p.Scheduler, p.ControllerManager, p.OperatorProbes, p.ElasticEtcd, p.ElasticEtcdPeer, p.Webhook, p.Progress,
		p.Volcano, p.SchedulerPlugins, p.KueueWebhook, p.KueueProbes} {
		if port != 0 { // an add-on the cluster does not run
			used = append(used, port)
		}
	}
	return append(used, p.Kubelets...)
}

// State is what `paddlejob up` recorded about a running cluster.
type State struct {
	Home      string     `json:"home"`
	Started   time.Time  `json:"started"`
	Binaries  string     `json:"binaries"`
	Ports     Ports      `json:"ports"`
	Processes []*process `json:"processes"`
	// With are the add-ons the cluster runs.
	With []string `json:"with,omitempty"`
	// Settings are the other options it was started with.
	Settings Settings `json:"settings,omitempty"`
	// HostPaths are the directories the container-runtime nodes' host-path
	// policy was written with (runtimenode_hostpaths.go), which a user's
	// build contexts are added to; nil for process nodes.
	HostPaths *HostPathDirs `json:"hostPaths,omitempty"`
}

// Server is the API server's URL.
func (s *State) Server() string { return fmt.Sprintf("https://127.0.0.1:%d", s.Ports.APIServer) }

// Kubeconfig is the path of the cluster's admin kubeconfig.
func (s *State) Kubeconfig() string { return layout{s.Home}.kubeconfig() }

func readState(l layout) (*State, error) {
	data, err := os.ReadFile(l.stateFile())
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("reading %s: %w", l.stateFile(), err)
	}
	return &s, nil
}

func writeState(l layout, s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(l.stateFile(), data, 0o600)
}

// writeKubeconfig writes a kubeconfig for a client certificate.
func writeKubeconfig(path, server string, ca, client *keyPair) error {
	caData, err := os.ReadFile(ca.CertFile)
	if err != nil {
		return err
	}
	certData, err := os.ReadFile(client.CertFile)
	if err != nil {
		return err
	}
	keyData, err := os.ReadFile(client.KeyFile)
	if err != nil {
		return err
	}
	const name = "paddlejob-local"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: certData, ClientKeyData: keyData}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}

var errNotRunning = errors.New("no local cluster is running")
