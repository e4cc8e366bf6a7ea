package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

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
