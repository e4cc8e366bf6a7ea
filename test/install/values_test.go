package install

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/yaml"

	"github.com/paddlejob/paddlejob/internal/operator"
	"github.com/paddlejob/paddlejob/internal/operator/controller"
)

const podIP = "192.0.2.10"

// operatorOptions parses the manager container's args as the operator binary
// does, after the kubelet's $(VAR) expansion of the container's env.
func operatorOptions(t testing.TB, r rendering) operator.Options {
	t.Helper()
	env := map[string]string{}
	for _, e := range slice(manager(t, r), "env") {
		switch str(e, "valueFrom", "fieldRef", "fieldPath") {
		case "status.podIP":
			env[str(e, "name")] = podIP
		case "metadata.namespace":
			env[str(e, "name")] = r.namespace
		default:
			env[str(e, "name")] = str(e, "value")
		}
	}
	expand := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	var a []string
	for _, arg := range args(t, r) {
		a = append(a, expand.ReplaceAllStringFunc(arg, func(ref string) string {
			if v, ok := env[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref
		}))
	}
	fs := flag.NewFlagSet("paddlejob-operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts := operator.DefaultOptions()
	opts.BindFlags(fs)
	if err := fs.Parse(a); err != nil {
		t.Fatalf("%s: the operator rejects its args %q: %v", r.name, a, err)
	}
	if fs.NArg() > 0 {
		t.Fatalf("%s: args the operator ignores: %q", r.name, fs.Args())
	}
	return opts
}

// Every arg every rendering passes is a flag the operator parses, and the
// chart's values reach the operator as the flags they name.
func TestValuesBecomeOperatorFlags(t *testing.T) {
	type want struct {
		leaderElection             bool
		namespaces, gang, certs    string
		metrics, probes, webhookAt string
		webhookPort                int
		progressAt                 string
		qps                        float64
		burst                      int
		etcd                       []string
		reconciles                 int
		debug                      bool
		ignoreKueue                bool
		plainMetrics               bool
	}
	defaults := operator.DefaultOptions()
	base := want{leaderElection: true, gang: defaults.Controller.GangScheduler, certs: operator.CertsSelf,
		metrics: podIP + ":8080", probes: podIP + ":8081", webhookAt: podIP, webhookPort: 9443, progressAt: podIP + ":8082",
		qps: defaults.QPS, burst: defaults.Burst, reconciles: defaults.Controller.MaxConcurrentReconciles}
	certManager := base
	certManager.certs = operator.CertsExternal
	full := certManager
	full.namespaces = "team-a,team-b"
	custom := want{namespaces: "a,b", gang: controller.GangSchedulerPlugins, certs: operator.CertsSelf,
		metrics: podIP + ":18080", probes: podIP + ":18081", progressAt: "0", qps: 50, burst: 100,
		etcd: []string{"http://etcd-0.etcd:2379", "http://etcd-1.etcd:2379"}, reconciles: 32, debug: true, ignoreKueue: true, plainMetrics: true}
	for _, c := range []struct {
		r    rendering
		want want
	}{
		{configDefault(t), base},
		{configCertManager(t), certManager},
		{chartDefault(t), base},
		{chartFull(t), full},
		{chartCustom(t), custom},
	} {
		t.Run(c.r.name, func(t *testing.T) {
			o := operatorOptions(t, c.r)
			got := want{leaderElection: o.LeaderElection, namespaces: o.Namespaces, gang: o.Controller.GangScheduler,
				certs: o.Webhook.Certs, metrics: o.MetricsAddr, probes: o.ProbeAddr, webhookAt: o.Webhook.Host,
				webhookPort: o.Webhook.Port, progressAt: o.Progress.Addr, qps: o.QPS, burst: o.Burst, etcd: o.Controller.ElasticEtcdEndpoints,
				reconciles: o.Controller.MaxConcurrentReconciles, ignoreKueue: o.Controller.IgnoreKueue, plainMetrics: !o.MetricsSecure,
				debug: o.Zap.Level != nil && o.Zap.Level.Enabled(zapcore.DebugLevel)}
			if c.want.webhookPort == 0 {
				got.webhookAt = "" // the webhook is off: where it would bind does not matter
			}
			if !equal(t, "operator options", fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", c.want)) {
				t.Logf("args: %q", args(t, c.r))
			}
		})
	}
}

// The custom values shape the pod as they say.
func TestCustomValuesShapeThePod(t *testing.T) {
	r := chartCustom(t)
	dep := deployment(t, r)
	pod := mapOf(dep.Object, "spec", "template", "spec")
	c := manager(t, r)
	for what, got := range map[string][2]any{
		"replicas":         {nested(dep.Object, "spec", "replicas"), int64(0)},
		"image":            {c["image"], "registry.example/paddlejob-operator:v9.9.9"},
		"imagePullPolicy":  {c["imagePullPolicy"], "Always"},
		"imagePullSecrets": {pod["imagePullSecrets"], []any{map[string]any{"name": "regcred"}}},
		"nodeSelector":     {pod["nodeSelector"], map[string]any{"kubernetes.io/os": "linux"}},
		"tolerations":      {len(slice(pod, "tolerations")), 1},
		"affinity":         {nested(pod, "affinity", "nodeAffinity") != nil, true},
		"resources":        {c["resources"], map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}}},
		"pod annotation":   {str(dep.Object, "spec", "template", "metadata", "annotations", "example.com/team"), "ml"},
		"pod label":        {str(dep.Object, "spec", "template", "metadata", "labels", "example.com/tier"), "control"},
		"volumes":          {pod["volumes"], nil},
		"volumeMounts":     {c["volumeMounts"], nil},
		"ports": {c["ports"], []any{
			map[string]any{"name": "metrics", "containerPort": int64(18080)},
			map[string]any{"name": "probes", "containerPort": int64(18081)},
		}},
		"metrics Service port": {nested(slice(mustFind(t, r, "Service", r.namespace, "paddlejob-operator-metrics").Object, "spec", "ports")[0], "port"), int64(18080)},
	} {
		equal(t, what, got[0], got[1])
	}
	if find(r.objs, "Certificate", r.namespace, "paddlejob-webhook") != nil {
		t.Error("cert-manager objects are installed though the webhook is off")
	}
}

// The schema's gang schedulers are the operator's, and helm refuses others.
func TestValuesSchema(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir(), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			GangScheduler struct {
				Enum []string `json:"enum"`
			} `json:"gangScheduler"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	sameStrings(t, "gangScheduler enum", schema.Properties.GangScheduler.Enum,
		[]string{"", controller.GangVolcano, controller.GangSchedulerPlugins, controller.GangNone})

	for _, bad := range []string{"gangScheduler=kube-batch", "replicaCount=many", "kubeAPI.burst=lots", "webhook.port=70000"} {
		cmd := exec.Command(helmBinary(t), "template", releaseName, chartDir(), "--set", bad)
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("helm template --set %s: accepted", bad)
		} else if !strings.Contains(string(out), "schema") && !strings.Contains(string(out), "at '/") {
			t.Errorf("helm template --set %s: failed, but not on the schema: %s", bad, out)
		}
	}
}

// helm lint passes, strict, with each values file.
func TestChartLints(t *testing.T) {
	for _, values := range [][]string{nil, {"values-full.yaml"}, {"values-custom.yaml"}} {
		a := []string{"lint", "--strict", chartDir(), "--namespace", elsewhereNS}
		for _, v := range values {
			a = append(a, "--values", filepath.Join(root, "test", "install", "testdata", v))
		}
		run(t, helmBinary(t), a...)
	}
}

// The README's values table names every value of values.yaml.
func TestReadmeDocumentsEveryValue(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Maps handed to Kubernetes as they are are one value.
	whole := []string{"resources", "podSecurityContext", "securityContext", "webhook.certManager.issuerRef"}
	var paths []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			p := prefix + k
			if sub, ok := v.(map[string]any); ok && len(sub) > 0 && !slices.Contains(whole, p) {
				walk(p+".", sub)
				continue
			}
			paths = append(paths, p)
		}
	}
	walk("", values)
	sort.Strings(paths)
	for _, p := range paths {
		if !strings.Contains(string(readme), "| `"+p+"` |") {
			t.Errorf("charts/paddlejob/README.md's values table lacks `%s`", p)
		}
	}
}
