package localcluster

import (
	"context"
	_ "embed"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddlejob/paddlejob/config"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/pki"
)

// Component names, also the names of their log files.
const (
	componentEtcd              = "etcd"
	componentElasticEtcd       = "elastic-etcd"
	componentElasticEtcdGuard  = "elastic-etcd-guard"
	componentAPIServer         = "kube-apiserver"
	componentControllerManager = "kube-controller-manager"
	componentScheduler         = "kube-scheduler"
	componentOperator          = "paddlejob-operator"
	// componentNode is the first node's process and the nodes' identity
	// (certificate, kubeconfig); node i's process is nodeName(i).
	componentNode = NodeName
	// componentNetwork joins the nodes' networks and plays the host in
	// them (network.go).
	componentNetwork = "paddlejob-network"
	// componentClusterDNS is CoreDNS, which the node runs: it has a
	// client certificate and a kubeconfig, not a process of its own here.
	componentClusterDNS = "coredns"
)

// Identities of the components, as their client certificates name them.
// The scheduler and controller manager use Kubernetes' own, which its
// built-in RBAC knows; the operator gets exactly the ClusterRole generated
// from its markers, as on a real cluster; the node gets node-rbac.yaml.
const (
	operatorUser = "paddlejob-operator"
	operatorNS   = "paddlejob-system"
	nodeUser     = "paddlejob-node"
	// clusterDNSUser is the user kubeadm's system:coredns role is for
	// (cluster-dns-rbac.yaml).
	clusterDNSUser = "system:coredns"
)

// boot starts a cluster step by step.
type boot struct {
	opts   Options
	l      layout
	bins   string
	paddle *node.PaddleRuntimes
	// addons are the directories of the add-ons' builds, by name.
	addons map[string]string
	// clusterDNS is the directory of CoreDNS's build.
	clusterDNS string
	// nodeRuntime and nodeImages are the container-runtime node's
	// (--node-runtime=containerd; runtimenodes.go).
	nodeRuntime kubebin.NodeRuntime
	nodeImages  []string
	st          *State
	ca          *keyPair
	// etcdCA signs the etcds' certificates and the API server's as their
	// client, and nothing else (etcd.go).
	etcdCA *keyPair
}

func (b *boot) run(ctx context.Context) (*State, error) {
	b.st = &State{Home: b.l.home, Started: time.Now(), Binaries: b.bins, With: b.opts.With, Settings: b.opts.settings()}
	ports := []*int{&b.st.Ports.EtcdClient, &b.st.Ports.EtcdPeer, &b.st.Ports.APIServer, &b.st.Ports.Scheduler,
		&b.st.Ports.ControllerManager, &b.st.Ports.OperatorProbes,
		&b.st.Ports.ElasticEtcd, &b.st.Ports.ElasticEtcdPeer, &b.st.Ports.Webhook, &b.st.Ports.Progress}
	addonPorts := map[string][]*int{
		AddonVolcano:      {&b.st.Ports.Volcano},
		AddonCoscheduling: {&b.st.Ports.SchedulerPlugins},
		AddonKueue:        {&b.st.Ports.KueueWebhook, &b.st.Ports.KueueProbes},
	}
	for _, name := range b.opts.With {
		ports = append(ports, addonPorts[name]...)
	}
	b.st.Ports.Kubelets = make([]int, b.opts.Nodes)
	for i := range b.st.Ports.Kubelets {
		ports = append(ports, &b.st.Ports.Kubelets[i])
	}
	picked, err := freePorts(len(ports))
	if err != nil {
		return nil, err
	}
	for i, p := range ports {
		*p = picked[i]
	}
	if err := checkSocketPaths(b.l); err != nil {
		return b.st, err
	}
	if err := b.step("certificates", b.certificates); err != nil {
		return b.st, err
	}
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{componentEtcd, b.startEtcd},
		{componentElasticEtcd, b.startElasticEtcd},
		{componentElasticEtcdGuard, b.startElasticEtcdGuard},
		{componentAPIServer, b.startAPIServer},
		{"PaddleJob CRD and operator RBAC", b.install},
		{componentControllerManager, b.startControllerManager},
		{"add-ons' CRDs and defaults", b.installAddons},
		{componentScheduler, b.startScheduler},
		{"add-ons", b.startAddons},
		{componentOperator, b.startOperator},
		{componentNetwork, b.startNetwork},
		{nodesStep(b.opts.Nodes), b.startNodes},
		{"default service account", b.createDefaultServiceAccount},
	}
	for _, s := range steps {
		if b.opts.NoOperator && (s.name == componentOperator) {
			continue
		}
		if len(b.opts.With) == 0 && strings.HasPrefix(s.name, "add-ons") {
			continue
		}
		if err := b.step(s.name, func() error { return s.fn(ctx) }); err != nil {
			return b.st, err
		}
	}
	if err := writeState(b.l, b.st); err != nil {
		return b.st, err
	}
	fmt.Fprintf(b.opts.Out, "local cluster ready: %s\n  kubeconfig: %s\n", b.st.Server(), b.l.kubeconfig())
	return b.st, nil
}

// step runs one step, printing what it does and how long it took.
func (b *boot) step(name string, fn func() error) error {
	fmt.Fprintf(b.opts.Out, "  %-34s ", name+" ...")
	start := time.Now()
	if err := fn(); err != nil {
		fmt.Fprintln(b.opts.Out, "failed")
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(b.opts.Out, "ok (%s)\n", time.Since(start).Round(10*time.Millisecond))
	// Record progress so a failure later can still stop what started.
	return writeState(b.l, b.st)
}

// launch starts a component and waits until ready says so, failing at once
// with the end of its log if the process exits meanwhile.
func (b *boot) launch(ctx context.Context, name string, args, env []string, timeout time.Duration, ready func() error) error {
	p, err := startProcess(b.opts.Executable, name, args, env, b.l.logs())
	if err != nil {
		return err
	}
	b.st.Processes = append(b.st.Processes, p)
	return waitFor(ctx, timeout, func() error {
		// A component that exits while starting is broken, not unlucky:
		// its supervisor would restart it in vain.
		if !p.alive() || p.supervised().Restarts > 0 {
			return stopWaiting(fmt.Errorf("%s exited:\n%s", name, tailFile(p.Log, 15)))
		}
		return ready()
	})
}

func (b *boot) bin(name string) string { return filepath.Join(b.bins, name) }

func (b *boot) certificates() error {
	dir := b.l.pki()
	ca, err := newCA(dir, "ca", "paddlejob-local-ca")
	if err != nil {
		return err
	}
	b.ca = ca
	loopback := []string{"127.0.0.1", "localhost"}
	if b.etcdCA, err = etcdCertificates(dir); err != nil {
		return err
	}
	specs := []certSpec{
		// Pods reach the API server at its forward on the host IP
		// (KUBERNETES_SERVICE_HOST) or at the kubernetes Service.
		{name: "apiserver", Spec: pki.Spec{CommonName: "kube-apiserver", Server: true,
			Hosts: append(loopback, hostIP, serviceIP, "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")}},
		{name: "apiserver-kubelet-client", Spec: pki.Spec{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}, Client: true}},
		{name: "admin", Spec: pki.Spec{CommonName: "paddlejob-admin", Organization: []string{"system:masters"}, Client: true}},
		{name: componentControllerManager, Spec: pki.Spec{CommonName: "system:kube-controller-manager", Client: true}},
		{name: componentScheduler, Spec: pki.Spec{CommonName: "system:kube-scheduler", Client: true}},
		{name: componentOperator, Spec: pki.Spec{CommonName: operatorUser, Client: true}},
		{name: componentNode, Spec: pki.Spec{CommonName: nodeUser, Client: true}},
		{name: componentClusterDNS, Spec: pki.Spec{CommonName: clusterDNSUser, Client: true}},
		// The API server reaches each kubelet API at its node's IP,
		// through its egress; the nodes share one serving certificate.
		{name: "kubelet-serving", Spec: pki.Spec{CommonName: NodeName, Server: true, Hosts: append(loopback, b.st.NodeIPs()...)}},
	}
	issued := map[string]*keyPair{}
	for _, s := range specs {
		kp, err := ca.issue(dir, s)
		if err != nil {
			return err
		}
		issued[s.name] = kp
	}
	if _, _, err := writeServiceAccountKey(dir); err != nil {
		return err
	}
	if b.runtimeNodes() {
		if err := b.runtimeNodeCredentials(); err != nil {
			return err
		}
	}
	server := b.st.Server()
	if err := writeKubeconfig(b.l.kubeconfig(), server, ca, issued["admin"]); err != nil {
		return err
	}
	for _, c := range []string{componentControllerManager, componentScheduler, componentOperator, componentNode} {
		if err := writeKubeconfig(b.l.componentConfig(c), server, ca, issued[c]); err != nil {
			return err
		}
	}
	// CoreDNS runs in each node's network namespace: it reaches the API
	// server through the cluster network's forward, on the host IP.
	if err := writeKubeconfig(b.l.componentConfig(componentClusterDNS), onHost("https", b.st.Ports.APIServer), ca, issued[componentClusterDNS]); err != nil {
		return err
	}
	return nil
}

func (b *boot) startAPIServer(ctx context.Context) error {
	pki := b.l.pki()
	f := func(name string) string { return filepath.Join(pki, name) }
	cfg, err := kube.LoadConfig(b.l.kubeconfig(), "")
	if err != nil {
		return err
	}
	if err := writeEgressSelector(b.l); err != nil {
		return err
	}
	if err := writeAdmissionConfig(b.l, b.opts.PodSecurity); err != nil {
		return err
	}
	return b.launch(ctx, componentAPIServer, append([]string{b.bin("kube-apiserver"),
		// The kubernetes Service's endpoint is the API server's forward on
		// the host IP, which has the same port (forwards).
		"--bind-address=127.0.0.1", "--advertise-address=" + hostIP, "--secure-port=" + itoa(b.st.Ports.APIServer),
		// The cluster network is reached through its egress (network.go).
		"--egress-selector-config-file=" + egressSelectorFile(b.l),
		"--etcd-servers=https://127.0.0.1:" + itoa(b.st.Ports.EtcdClient),
		"--etcd-cafile=" + b.etcdCA.CertFile, "--etcd-certfile=" + f(apiServerEtcdClient+".crt"), "--etcd-keyfile=" + f(apiServerEtcdClient+".key"),
		"--tls-cert-file=" + f("apiserver.crt"), "--tls-private-key-file=" + f("apiserver.key"),
		"--client-ca-file=" + b.ca.CertFile,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		// PodSecurity (on by default): the cluster's level in every
		// namespace that names none (podsecurity.go).
		"--admission-control-config-file=" + b.l.admissionConfig(),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + f("sa.pub"), "--service-account-signing-key-file=" + f("sa.key"),
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--kubelet-client-certificate=" + f("apiserver-kubelet-client.crt"), "--kubelet-client-key=" + f("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + b.ca.CertFile,
		"--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true",
		"--profiling=false",
		"--v=1",
	}, b.runtimeNodeAPIServerFlags()...), nil, 90*time.Second, func() error { return getOK(ctx, cfg, "/readyz") })
}

func (b *boot) install(ctx context.Context) error {
	cfg, err := kube.LoadConfig(b.l.kubeconfig(), "")
	if err != nil {
		return err
	}
	applier, err := kube.NewApplier(cfg)
	if err != nil {
		return err
	}
	objs := []string{operatorNamespace, defaultNamespacePrivileged}
	for _, f := range []string{config.CRDFile, config.OperatorRoleFile} {
		data, err := config.Manifests.ReadFile(f)
		if err != nil {
			return err
		}
		objs = append(objs, string(data))
	}
	objs = append(objs, operatorBinding, nodeRBAC, clusterDNSRBAC)
	if b.runtimeNodes() {
		b.st.HostPaths = &HostPathDirs{ReadOnly: b.opts.HostPathRO, ReadWrite: b.opts.HostPathRW,
			Hidden: append(append([]string{b.l.home}, b.opts.KubeconfigFiles()...), "/proc", "/sys", "/dev")}
		objs = append(objs, runtimeNodeUserNamespaces, b.st.HostPaths.policy())
	}
	manifests, err := kube.DecodeManifests([]byte(strings.Join(objs, "\n---\n")))
	if err != nil {
		return err
	}
	var webhooks []*unstructured.Unstructured
	if !b.opts.NoOperator {
		if webhooks, err = b.webhookConfigurations(); err != nil {
			return err
		}
	}
	for _, obj := range append(manifests, webhooks...) {
		if err := applier.Apply(ctx, obj, ""); err != nil {
			return err
		}
	}
	return waitFor(ctx, 30*time.Second, func() error { return served(ctx, cfg, "paddlejobs.batch.paddlepaddle.org") })
}

//go:embed node-rbac.yaml
var nodeRBAC string

//go:embed cluster-dns-rbac.yaml
var clusterDNSRBAC string

// operatorNamespace holds the operator's webhook certificate Secret.
const operatorNamespace = `apiVersion: v1
kind: Namespace
metadata:
  name: ` + operatorNS + "\n"

// operatorBinding binds the operator's generated roles to its
// certificate's user.
const operatorBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: paddlejob-operator
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: paddlejob-operator
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: ` + operatorUser + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: paddlejob-operator
  namespace: ` + operatorNS + `
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: paddlejob-operator
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: ` + operatorUser + "\n"

// webhookConfigurations are the generated webhook configurations, calling
// the operator — a process of this machine, not a pod behind a Service — at
// its loopback URL and trusting the cluster's CA, which issues its
// certificate (startOperator).
func (b *boot) webhookConfigurations() ([]*unstructured.Unstructured, error) {
	return kube.WebhookConfigurationsAt(fmt.Sprintf("https://127.0.0.1:%d", b.st.Ports.Webhook), b.ca.CertPEM)
}

func (b *boot) startControllerManager(ctx context.Context) error {
	kc := b.l.componentConfig(componentControllerManager)
	return b.launch(ctx, componentControllerManager, []string{b.bin("kube-controller-manager"),
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + itoa(b.st.Ports.ControllerManager),
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		// Every default controller, the endpoint ones included: pods have
		// IPs of the pod network, and the node's Service proxy forwards to
		// the EndpointSlices these write.
		"--controllers=*",
		"--service-account-private-key-file=" + filepath.Join(b.l.pki(), "sa.key"),
		"--root-ca-file=" + b.ca.CertFile,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--cluster-signing-cert-file=" + b.ca.CertFile, "--cluster-signing-key-file=" + b.ca.KeyFile,
		"--profiling=false",
		"--v=1",
	}, nil, 60*time.Second, func() error { return getInsecure(ctx, b.st.Ports.ControllerManager, "/healthz") })
}

func (b *boot) startScheduler(ctx context.Context) error {
	kc := b.l.componentConfig(componentScheduler)
	return b.launch(ctx, componentScheduler, []string{b.bin("kube-scheduler"),
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + itoa(b.st.Ports.Scheduler),
		"--leader-elect=false",
		"--profiling=false",
		"--v=1",
	}, nil, 60*time.Second, func() error { return getInsecure(ctx, b.st.Ports.Scheduler, "/healthz") })
}

func (b *boot) startOperator(ctx context.Context) error {
	probes := "127.0.0.1:" + itoa(b.st.Ports.OperatorProbes)
	// The operator is a process of this machine, not a pod: no kubelet
	// mounts its certificate Secret, so it serves a certificate of the
	// cluster's CA, which its webhook configurations trust
	// (webhookConfigurations), as the Kueue add-on does.
	certDir := filepath.Join(b.l.home, "webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	if _, err := b.ca.issue(certDir, certSpec{name: "tls", Spec: pki.Spec{CommonName: "paddlejob-webhook", Server: true, Hosts: []string{"127.0.0.1"}}}); err != nil {
		return err
	}
	return b.launch(ctx, componentOperator, []string{b.opts.Executable, "operator",
		"--metrics-bind-address=0", "--health-probe-bind-address=" + probes,
		"--elastic-etcd-endpoints=" + elasticEtcdURL(b.st.Ports),
		"--webhook-host=127.0.0.1", "--webhook-port=" + itoa(b.st.Ports.Webhook),
		"--webhook-certs=external", "--webhook-cert-dir=" + certDir, "--operator-namespace=" + operatorNS,
		// Pods reach the operator's progress endpoint through its forward
		// on the host IP.
		"--progress-bind-address=127.0.0.1:" + itoa(b.st.Ports.Progress),
		"--progress-url=" + onHost("http", b.st.Ports.Progress),
	}, []string{"KUBECONFIG=" + b.l.componentConfig(componentOperator)},
		60*time.Second, func() error { return getPlain(ctx, "http://"+probes+"/readyz") })
}

// createDefaultServiceAccount gives namespace default its default
// ServiceAccount, which a pod there needs before the API server admits it.
// The controller manager's service-account controller creates it too, but
// only once its informers have synced, 3 to 4 s after it starts: creating it
// here takes that off every up, and the controller finds it there.
func (b *boot) createDefaultServiceAccount(ctx context.Context) error {
	cfg, err := kube.LoadConfig(b.l.kubeconfig(), "")
	if err != nil {
		return err
	}
	return ensureServiceAccount(ctx, cfg, "default", "default")
}

// formatLabels is labels as the node's --node-labels takes them, k=v,...,
// in key order.
func formatLabels(labels map[string]string) string {
	pairs := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		pairs = append(pairs, k+"="+labels[k])
	}
	return strings.Join(pairs, ",")
}

// capacityArg is the node's --capacity: what the user asks to advertise
// instead of the host's CPUs and memory, and the emulated GPUs.
func capacityArg(capacity string, gpus int) string {
	if capacity = strings.Trim(capacity, ", "); capacity != "" {
		capacity += ","
	}
	return capacity + "nvidia.com/gpu=" + itoa(gpus)
}
