package localcluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/pki"
)

// Add-ons a cluster runs when Options.With names them (`up --with`): real
// gang schedulers and queueing, each built from its own Go module by kubebin
// and run as a supervised process of the cluster like kube-scheduler.
const (
	AddonVolcano      = kubebin.AddonVolcano
	AddonCoscheduling = kubebin.AddonCoscheduling
	AddonKueue        = kubebin.AddonKueue
)

// Process names of the add-ons, also the names of their log files.
const (
	componentVolcano          = "vc-scheduler"
	componentSchedulerPlugins = "scheduler-plugins-scheduler"
	componentKueue            = "kueue-manager"
)

// Scheduler names pods name to be placed by the gang schedulers.
const (
	VolcanoSchedulerName = "volcano"
	// CoschedulingSchedulerName is the operator's default
	// --scheduler-plugins-name.
	CoschedulingSchedulerName = "scheduler-plugins-scheduler"
	// KueueNamespace holds Kueue's own objects.
	KueueNamespace = "kueue-system"
	// KueueLocalQueue is the LocalQueue of namespace default a cluster
	// with Kueue starts with, feeding ClusterQueue KueueClusterQueue.
	KueueLocalQueue   = "default"
	KueueClusterQueue = "default"
)

// ParseAddons checks a --with list: known add-ons, each once, in start order.
func ParseAddons(names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if _, ok := kubebin.Addons[n]; !ok {
			return nil, fmt.Errorf("unknown add-on %q: known are %s", n, strings.Join(kubebin.AddonNames, ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		return slices.Index(kubebin.AddonNames, a) - slices.Index(kubebin.AddonNames, b)
	})
	return out, nil
}

// ensureAddons builds (once) every add-on asked for and returns their
// directories by name.
func ensureAddons(ctx context.Context, opts Options) (map[string]string, error) {
	dirs := map[string]string{}
	for _, name := range opts.With {
		dir, err := kubebin.EnsureAddon(ctx, kubebin.Options{Log: prefixed(opts.Out, "  ")}, name)
		if err != nil {
			return nil, err
		}
		dirs[name] = dir
	}
	return dirs, nil
}

func (b *boot) addonFile(name, path string) string {
	return kubebin.Addons[name].File(b.addons[name], path)
}

// addonIdentity issues an add-on its client certificate and kubeconfig. The
// add-ons run as members of system:masters: their upstream RBAC comes as
// Helm templates and kustomizations for in-cluster service accounts, and on
// a single-user development cluster the difference buys nothing.
func (b *boot) addonIdentity(component string) (string, error) {
	kp, err := b.ca.issue(b.l.pki(), certSpec{name: component, Spec: pki.Spec{CommonName: "paddlejob-" + component,
		Organization: []string{"system:masters"}, Client: true}})
	if err != nil {
		return "", err
	}
	kc := b.l.componentConfig(component)
	return kc, writeKubeconfig(kc, b.st.Server(), b.ca, kp)
}

func (b *boot) addonDir() (string, error) {
	dir := filepath.Join(b.l.home, "addons")
	return dir, os.MkdirAll(dir, 0o700)
}

// installAddons installs the add-ons' CRDs and default objects. It runs
// before the operator starts: the operator looks for PodGroup kinds once,
// when it starts.
func (b *boot) installAddons(ctx context.Context) error {
	cfg, err := kube.LoadConfig(b.l.kubeconfig(), "")
	if err != nil {
		return err
	}
	var crds []*unstructured.Unstructured
	for _, name := range b.opts.With {
		a := kubebin.Addons[name]
		for _, f := range a.Files {
			if !strings.Contains(f, "/crd/") {
				continue
			}
			objs, err := readManifests(b.addonFile(name, f))
			if err != nil {
				return err
			}
			for _, o := range objs {
				if name == AddonKueue {
					if err := b.kueueConversion(o); err != nil {
						return err
					}
				}
				crds = append(crds, o)
			}
		}
	}
	if err := applyAll(ctx, cfg, crds); err != nil {
		return err
	}
	for _, o := range crds {
		if err := waitFor(ctx, 60*time.Second, func() error { return served(ctx, cfg, o.GetName()) }); err != nil {
			return err
		}
	}
	var objs []string
	if slices.Contains(b.opts.With, AddonVolcano) {
		objs = append(objs, volcanoDefaultQueue)
	}
	if slices.Contains(b.opts.With, AddonKueue) {
		objs = append(objs, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+KueueNamespace+"\n")
	}
	if len(objs) == 0 {
		return nil
	}
	manifests, err := kube.DecodeManifests([]byte(strings.Join(objs, "\n---\n")))
	if err != nil {
		return err
	}
	return applyAll(ctx, cfg, manifests)
}

// volcanoDefaultQueue is the Queue a PodGroup without one is placed in. The
// scheduler would create it too; installing it makes it there before any
// job is.
const volcanoDefaultQueue = `apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: default
spec:
  weight: 1
  reclaimable: true
`

func readManifests(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objs, err := kube.DecodeManifests(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

// applyAll applies objects with a fresh applier, so kinds whose CRDs were
// just established are known.
func applyAll(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) error {
	applier, err := kube.NewApplier(cfg)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := applier.Apply(ctx, o, ""); err != nil {
			return err
		}
	}
	return nil
}

// served reports (nil) whether a CRD is established and every version it
// serves is in the API server's discovery, so objects of its kind can be
// written.
func served(ctx context.Context, cfg *rest.Config, name string) error {
	c, err := kube.NewClient(cfg)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, kube.Key("", name), crd); err != nil {
		return err
	}
	ok := false
	for _, cond := range crd.Status.Conditions {
		ok = ok || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
	}
	if !ok {
		return fmt.Errorf("CRD %s is not established yet", name)
	}
	// Established is not yet served: the API server's discovery lists the
	// new kind a moment later, and objects of it cannot be written before.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		gv := crd.Spec.Group + "/" + v.Name
		list, err := dc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			return fmt.Errorf("CRD %s: %s is not in discovery yet: %w", name, gv, err)
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == crd.Spec.Names.Plural }) {
			return fmt.Errorf("CRD %s: discovery does not list %s in %s yet", name, crd.Spec.Names.Plural, gv)
		}
	}
	return nil
}

// startAddons starts the add-ons' processes, after the cluster's own
// scheduler.
func (b *boot) startAddons(ctx context.Context) error {
	for _, name := range b.opts.With {
		var err error
		switch name {
		case AddonVolcano:
			err = b.startVolcano(ctx)
		case AddonCoscheduling:
			err = b.startCoscheduling(ctx)
		case AddonKueue:
			err = b.startKueue(ctx)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// volcanoConf enables Volcano's gang scheduling: enqueue admits a PodGroup
// only when its minimum resources fit, allocate binds a group's pods only
// when minMember of them fit.
const volcanoConf = `actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
`

func (b *boot) startVolcano(ctx context.Context) error {
	kc, err := b.addonIdentity(componentVolcano)
	if err != nil {
		return err
	}
	dir, err := b.addonDir()
	if err != nil {
		return err
	}
	conf := filepath.Join(dir, "volcano-scheduler.conf")
	if err := os.WriteFile(conf, []byte(volcanoConf), 0o644); err != nil {
		return err
	}
	healthz := "127.0.0.1:" + itoa(b.st.Ports.Volcano)
	return b.launch(ctx, componentVolcano, []string{filepath.Join(b.addons[AddonVolcano], "vc-scheduler"),
		"--kubeconfig=" + kc,
		"--scheduler-conf=" + conf,
		"--scheduler-name=" + VolcanoSchedulerName,
		"--schedule-period=500ms",
		"--leader-elect=false",
		"--enable-healthz=true", "--healthz-address=" + healthz,
		"--enable-metrics=false",
		"--cache-dumper=false",
		"--v=2",
	}, nil, 60*time.Second, func() error { return getPlain(ctx, "http://"+healthz+"/healthz") })
}

func (b *boot) startCoscheduling(ctx context.Context) error {
	kc, err := b.addonIdentity(componentSchedulerPlugins)
	if err != nil {
		return err
	}
	dir, err := b.addonDir()
	if err != nil {
		return err
	}
	// Coscheduling as a second scheduler: its own profile and name, the
	// queue-sort that keeps a group's pods together, and a permit wait
	// after which a group that did not fit whole gives its nodes back.
	conf := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: %q
profiles:
- schedulerName: %s
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
`, kc, CoschedulingSchedulerName)
	path := filepath.Join(dir, "scheduler-plugins.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return err
	}
	return b.launch(ctx, componentSchedulerPlugins, []string{filepath.Join(b.addons[AddonCoscheduling], "scheduler-plugins-scheduler"),
		"--config=" + path,
		"--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + itoa(b.st.Ports.SchedulerPlugins),
		// Coscheduling asks to retry a group it turned down only when a
		// pod or PodGroup is added or changed, not when a pod leaves and
		// frees room: such a group waits for this flush (5 minutes by
		// default).
		"--pod-max-in-unschedulable-pods-duration=15s",
		"--profiling=false",
		"--v=2",
	}, nil, 60*time.Second, func() error { return getInsecure(ctx, b.st.Ports.SchedulerPlugins, "/healthz") })
}

// kueueWebhookURL is where the API server calls Kueue's webhooks.
func (b *boot) kueueWebhookURL(path string) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", b.st.Ports.KueueWebhook, path)
}

// kueueConverted are the CRDs Kueue's kustomization gives a conversion
// webhook (the others convert between their versions by relabelling).
var kueueConverted = []string{"localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters"}

// kueueConversion points the conversion webhook of those CRDs at the
// manager's loopback port, where Kueue's kustomization names its Service.
func (b *boot) kueueConversion(crd *unstructured.Unstructured) error {
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	if !slices.Contains(kueueConverted, plural) {
		return nil
	}
	return unstructured.SetNestedField(crd.Object, map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"conversionReviewVersions": []any{"v1"},
			"clientConfig": map[string]any{
				"url":      b.kueueWebhookURL("/convert"),
				"caBundle": b.caBundle(),
			},
		},
	}, "spec", "conversion")
}

func (b *boot) caBundle() string {
	return base64.StdEncoding.EncodeToString(b.ca.CertPEM)
}

// kueueFrameworks are the integrations the local Kueue manages: batch/v1
// Jobs. (PaddleJobs come in through the operator's own integration.)
var kueueFrameworks = []string{"batch/job"}

func (b *boot) startKueue(ctx context.Context) error {
	kc, err := b.addonIdentity(componentKueue)
	if err != nil {
		return err
	}
	dir, err := b.addonDir()
	if err != nil {
		return err
	}
	certDir := filepath.Join(dir, "kueue-webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	serving, err := b.ca.Issue(pki.Spec{CommonName: "kueue-webhook", Server: true, Hosts: []string{"127.0.0.1"}}, time.Now(), certValidity)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.crt"), serving.CertPEM, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.key"), serving.KeyPEM, 0o600); err != nil {
		return err
	}
	probes := "127.0.0.1:" + itoa(b.st.Ports.KueueProbes)
	var fw strings.Builder
	for _, f := range kueueFrameworks {
		fmt.Fprintf(&fw, "  - %q\n", f)
	}
	conf := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: %s
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %q
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
integrations:
  frameworks:
%s  externalFrameworks:
  - %[6]s
multiKueue:
  externalFrameworks:
  - name: %[6]s
`, KueueNamespace, probes, b.st.Ports.KueueWebhook, certDir, fw.String(), paddlev1.KueueFrameworkName)
	path := filepath.Join(dir, "kueue.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return err
	}
	// With its own certificate management off, the manager reads a
	// certificate for its metrics server from /etc/kueue/metrics/certs, a
	// path of a container image: it runs in a bubblewrap sandbox that sees
	// the host read-only with an /etc of its own holding that path, bound
	// to the webhook's certificate (the metrics server itself is off).
	args := []string{"bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--tmpfs", "/etc"}
	for _, f := range []string{"/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/ssl", "/etc/localtime"} {
		if _, err := os.Stat(f); err == nil {
			args = append(args, "--ro-bind", f, f)
		}
	}
	args = append(args, "--ro-bind", certDir, "/etc/kueue/metrics/certs",
		"--", filepath.Join(b.addons[AddonKueue], "kueue-manager"),
		"--config="+path,
		// The visibility API is an aggregated API server of its own,
		// which the local cluster does not register.
		"--feature-gates=VisibilityOnDemand=false",
		"--zap-log-level=info")
	if err := b.launch(ctx, componentKueue, args, []string{"KUBECONFIG=" + kc}, 90*time.Second,
		func() error { return getPlain(ctx, "http://"+probes+"/readyz") }); err != nil {
		return err
	}
	cfg, err := kube.LoadConfig(b.l.kubeconfig(), "")
	if err != nil {
		return err
	}
	hooks, err := b.kueueWebhooks()
	if err != nil {
		return err
	}
	if err := applyAll(ctx, cfg, hooks); err != nil {
		return err
	}
	defaults, err := kube.DecodeManifests([]byte(kueueDefaults()))
	if err != nil {
		return err
	}
	// The webhooks may take a moment to answer through the API server.
	return waitFor(ctx, 60*time.Second, func() error { return applyAll(ctx, cfg, defaults) })
}

// kueueWebhooks are Kueue's generated webhook configurations, kept to the
// webhooks of Kueue's own kinds and of the integrations enabled here (the
// manager serves no others, and a webhook nobody serves would fail every
// pod, Deployment… the API server sends it), calling the manager at its
// loopback URL.
func (b *boot) kueueWebhooks() ([]*unstructured.Unstructured, error) {
	objs, err := readManifests(b.addonFile(AddonKueue, "config/components/webhook/manifests.yaml"))
	if err != nil {
		return nil, err
	}
	served := []string{"-kueue-x-k8s-io-"}
	for _, f := range kueueFrameworks {
		group, _, _ := strings.Cut(f, "/")
		served = append(served, "-"+strings.ReplaceAll(group, ".", "-")+"-")
	}
	for _, o := range objs {
		o.SetName("kueue-" + o.GetName())
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		var kept []any
		for _, h := range hooks {
			cc := h.(map[string]any)["clientConfig"].(map[string]any)
			path, _, _ := unstructured.NestedString(cc, "service", "path")
			if !slices.ContainsFunc(served, func(s string) bool { return strings.Contains(path, s) }) {
				continue
			}
			delete(cc, "service")
			cc["url"] = b.kueueWebhookURL(path)
			cc["caBundle"] = b.caBundle()
			kept = append(kept, h)
		}
		if err := unstructured.SetNestedSlice(o.Object, kept, "webhooks"); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// kueueDefaults are a ResourceFlavor, a ClusterQueue whose quota is the
// machine's CPUs and memory, and LocalQueue default of namespace default
// feeding it.
func kueueDefaults() string {
	mem := "8Gi"
	if m, err := totalMemory(); err == nil {
		mem = fmt.Sprintf("%dMi", m>>20)
	}
	return fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: default
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: %s
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default
      resources:
      - name: cpu
        nominalQuota: %d
      - name: memory
        nominalQuota: %s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: %s
  namespace: default
spec:
  clusterQueue: %s
`, KueueClusterQueue, runtime.NumCPU(), mem, KueueLocalQueue, KueueClusterQueue)
}

// totalMemory is the machine's memory in bytes, from /proc/meminfo.
func totalMemory() (uint64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		var kb uint64
		if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
			return kb << 10, nil
		}
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}
