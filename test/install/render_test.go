package install

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddlejob/paddlejob/internal/operator"
)

// The chart's crds/ are byte-for-byte config/crd/bases, and every rendering
// installs exactly the generated CRDs.
func TestCRDsAreTheGeneratedOnes(t *testing.T) {
	generated, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(generated) == 0 {
		t.Fatalf("no generated CRD: %v", err)
	}
	copies, err := filepath.Glob(filepath.Join(chartDir(), "crds", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names, copyNames []string
	var want []*unstructured.Unstructured
	for _, g := range generated {
		names = append(names, filepath.Base(g))
		gen, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		if cp, err := os.ReadFile(filepath.Join(chartDir(), "crds", filepath.Base(g))); err != nil {
			t.Errorf("the chart has no copy of %s (run make manifests): %v", filepath.Base(g), err)
		} else if !bytes.Equal(cp, gen) {
			t.Errorf("charts/paddlejob/crds/%s is not config/crd/bases' (run make manifests)", filepath.Base(g))
		}
		want = append(want, readObjects(t, "config/crd/bases/"+filepath.Base(g))...)
	}
	for _, c := range copies {
		copyNames = append(copyNames, filepath.Base(c))
	}
	sameStrings(t, "charts/paddlejob/crds vs config/crd/bases", copyNames, names)

	for _, r := range []rendering{configDefault(t), configCertManager(t), chartDefault(t), chartFull(t), chartCustom(t), chartElsewhere(t)} {
		got := ofKind(r.objs, "CustomResourceDefinition")
		sameStrings(t, r.name+": CRDs", keys(got), keys(want))
		for _, w := range want {
			if g := find(got, w.GetKind(), "", w.GetName()); g != nil && !equal(t, r.name+": CRD "+w.GetName(), g.Object, w.Object) {
				break
			}
		}
	}
}

// The roles carry exactly the rules of config/rbac (the ClusterRole and Role
// controller-gen generates, the leader-election Role), bound to the
// operator's ServiceAccount, and no other role or binding is installed.
// With the Kueue integration off, the ClusterRole lacks exactly the rules of
// Kueue's groups and PriorityClasses.
func TestRolesAreTheGeneratedOnes(t *testing.T) {
	generated := append(readObjects(t, "config/rbac/role.yaml"), readObjects(t, "config/rbac/leader_election_role.yaml")...)
	generated = append(generated, readObjects(t, "config/rbac/metrics_reader_role.yaml")...)
	rulesOf := func(kind, name string) []any {
		for _, o := range generated {
			if o.GetKind() == kind && o.GetName() == name {
				return slice(o.Object, "rules")
			}
		}
		t.Fatalf("config/rbac has no %s %s", kind, name)
		return nil
	}
	for _, r := range operatorRenderings(t) {
		t.Run(r.name, func(t *testing.T) {
			ns := r.namespace
			sa := str(deployment(t, r).Object, "spec", "template", "spec", "serviceAccountName")
			mustFind(t, r, "ServiceAccount", ns, sa)
			type role struct{ kind, namespace, name string }
			clusterRules := rulesOf("ClusterRole", "paddlejob-operator")
			if r.noKueue {
				clusterRules = slices.DeleteFunc(slices.Clone(clusterRules), func(rule any) bool {
					groups := fmt.Sprint(rule.(map[string]any)["apiGroups"])
					return groups == "[kueue.x-k8s.io]" || groups == "[scheduling.k8s.io]"
				})
			}
			want := map[role][]any{
				{"ClusterRole", "", "paddlejob-operator"}: clusterRules,
				{"Role", ns, "paddlejob-operator"}:        rulesOf("Role", "paddlejob-operator"),
			}
			if r.leaderElection {
				want[role{"Role", ns, "paddlejob-operator-leader-election"}] = rulesOf("Role", "paddlejob-operator-leader-election")
			}
			// The metrics reader is for scrapers, bound by the user.
			var gotRoles, wantRoles, gotBindings, wantBindings []string
			if !r.plainMetrics {
				reader := mustFind(t, r, "ClusterRole", "", "paddlejob-metrics-reader")
				equal(t, "ClusterRole paddlejob-metrics-reader rules", slice(reader.Object, "rules"), rulesOf("ClusterRole", "paddlejob-metrics-reader"))
				wantRoles = append(wantRoles, "ClusterRole /paddlejob-metrics-reader")
			}
			for k, rules := range want {
				wantRoles = append(wantRoles, k.kind+" "+k.namespace+"/"+k.name)
				if o := find(r.objs, k.kind, k.namespace, k.name); o != nil {
					// The chart lists the Kueue integration's rules last.
					equal(t, k.kind+" "+k.name+" rules", sortedRules(slice(o.Object, "rules")), sortedRules(rules))
				}
				bindingKind := map[string]string{"ClusterRole": "ClusterRoleBinding", "Role": "RoleBinding"}[k.kind]
				wantBindings = append(wantBindings, bindingKind+" "+k.namespace+"/"+k.name)
				if b := find(r.objs, bindingKind, k.namespace, k.name); b != nil {
					equal(t, bindingKind+" "+k.name, map[string]any{"roleRef": b.Object["roleRef"], "subjects": b.Object["subjects"]},
						map[string]any{
							"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": k.kind, "name": k.name},
							"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": ns}},
						})
				}
			}
			for _, o := range r.objs {
				switch o.GetKind() {
				case "ClusterRole", "Role":
					gotRoles = append(gotRoles, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
				case "ClusterRoleBinding", "RoleBinding":
					gotBindings = append(gotBindings, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
				}
			}
			sameStrings(t, "roles", gotRoles, wantRoles)
			sameStrings(t, "bindings", gotBindings, wantBindings)
		})
	}
}

// The webhook configurations carry exactly the webhooks of
// config/webhook/manifests.yaml, under the names the operator injects its CA
// into, calling the webhook Service the operator's certificate is for.
// Only their names, clientConfig and annotations are the installation's.
func TestWebhooksAreTheGeneratedOnes(t *testing.T) {
	wopts := operator.DefaultWebhookOptions()
	generated := readObjects(t, "config/webhook/manifests.yaml")
	names := map[string]string{
		"MutatingWebhookConfiguration":   wopts.MutatingConfig,
		"ValidatingWebhookConfiguration": wopts.ValidatingConfig,
	}
	for _, r := range operatorRenderings(t) {
		t.Run(r.name, func(t *testing.T) {
			mgr := manager(t, r)
			a := args(t, r)
			var configs []string
			for _, o := range r.objs {
				if strings.HasSuffix(o.GetKind(), "WebhookConfiguration") {
					configs = append(configs, o.GetKind()+" "+o.GetName())
				}
			}
			if !r.webhook {
				checkWebhookIsOff(t, r, wopts, configs, a)
				return
			}
			var wantConfigs []string
			for kind, name := range names {
				wantConfigs = append(wantConfigs, kind+" "+name)
			}
			sameStrings(t, "webhook configurations", configs, wantConfigs)
			var certName string
			if r.certManager {
				certName = checkWebhookCertificate(t, r, wopts, a)
			} else {
				checkSelfIssuedSecret(t, r, wopts, a)
			}
			servicePort := checkWebhookService(t, r, wopts, mgr, a)
			for kind, name := range names {
				if got := find(r.objs, kind, "", name); got != nil {
					checkWebhooksAreGenerated(t, r, wopts, got, generated, servicePort, certName)
				}
			}
		})
	}
}

// checkWebhookIsOff checks a rendering without the webhook: no webhook
// configuration (configs), no webhook Service, and the operator's args a
// turn the webhook off.
func checkWebhookIsOff(t *testing.T, r rendering, wopts operator.WebhookOptions, configs, a []string) {
	t.Helper()
	sameStrings(t, "webhook configurations", configs, nil)
	if find(r.objs, "Service", r.namespace, wopts.Service) != nil {
		t.Errorf("the webhook is off but its Service %s is installed", wopts.Service)
	}
	if !slices.Contains(a, "--webhook-port=0") {
		t.Errorf("the webhook is off but the operator's args %q do not turn it off", a)
	}
}

// checkWebhookService checks that the webhook Service leads to the
// webhook port of the manager container mgr, the one the operator's args
// a serve on, and selects the operator's pods. It returns the Service's
// port.
func checkWebhookService(t *testing.T, r rendering, wopts operator.WebhookOptions, mgr map[string]any, a []string) any {
	t.Helper()
	svc := mustFind(t, r, "Service", r.namespace, wopts.Service)
	ports := slice(svc.Object, "spec", "ports")
	if len(ports) != 1 || str(ports[0], "targetPort") != "webhook" {
		t.Fatalf("webhook Service ports %v: want one, to the container's webhook port", ports)
	}
	servicePort := nested(ports[0], "port")
	selects(t, r, svc)
	var webhookPort any
	for _, p := range slice(mgr, "ports") {
		if str(p, "name") == "webhook" {
			webhookPort = nested(p, "containerPort")
		}
	}
	if webhookPort == nil || !slices.Contains(a, fmt.Sprint("--webhook-port=", webhookPort)) {
		t.Errorf("the container's webhook port %v is not the operator's --webhook-port (args %q)", webhookPort, a)
	}
	return servicePort
}

// checkWebhooksAreGenerated checks the rendering's webhook configuration
// got against the generated one of its kind: the CA injection annotation
// in cert-manager mode (from certName) and none otherwise, then each
// webhook the same but for its clientConfig, which calls the webhook
// Service on servicePort at the generated path.
func checkWebhooksAreGenerated(t *testing.T, r rendering, wopts operator.WebhookOptions, got *unstructured.Unstructured,
	generated []*unstructured.Unstructured, servicePort any, certName string) {
	t.Helper()
	kind := got.GetKind()
	var gen *unstructured.Unstructured
	for _, g := range generated {
		if g.GetKind() == kind {
			gen = g
		}
	}
	wantAnnotations := map[string]string{}
	if r.certManager {
		wantAnnotations["cert-manager.io/inject-ca-from"] = r.namespace + "/" + certName
	}
	equal(t, kind+" annotations", stringMap(got.Object, "metadata", "annotations"), wantAnnotations)
	gotHooks, genHooks := slice(got.Object, "webhooks"), slice(gen.Object, "webhooks")
	if len(gotHooks) != len(genHooks) {
		t.Errorf("%s: %d webhooks, generated %d", kind, len(gotHooks), len(genHooks))
		return
	}
	for i := range genHooks {
		g, w := copyMap(gotHooks[i]), copyMap(genHooks[i])
		wantService := map[string]any{"name": wopts.Service, "namespace": r.namespace, "path": str(w, "clientConfig", "service", "path"), "port": servicePort}
		if servicePort == int64(443) && nested(g, "clientConfig", "service", "port") == nil {
			delete(wantService, "port") // the default
		}
		equal(t, kind+" webhook "+str(w, "name")+" clientConfig", g["clientConfig"], map[string]any{"service": wantService})
		delete(g, "clientConfig")
		delete(w, "clientConfig")
		equal(t, kind+" webhook "+str(w, "name"), g, w)
	}
}

// config/default and the chart with default values install the same
// objects, and so do config/overlays/cert-manager plus config/prometheus and
// the chart with cert-manager and the ServiceMonitor on. The one intended
// difference: config/default creates its Namespace, the chart installs into
// the release namespace, which Helm does not own.
func TestChartInstallsWhatConfigInstalls(t *testing.T) {
	withoutNamespace := func(objs []*unstructured.Unstructured) []string {
		var out []string
		for _, k := range keys(objs) {
			if k != "Namespace "+operatorNS {
				out = append(out, k)
			}
		}
		return out
	}
	def := configDefault(t)
	if find(def.objs, "Namespace", "", operatorNS) == nil {
		t.Errorf("config/default no longer creates its Namespace: drop the intended difference here")
	}
	sameStrings(t, "chart (default values) vs config/default", keys(chartDefault(t).objs), withoutNamespace(def.objs))
	full := append(configCertManager(t).objs, configPrometheus(t).objs...)
	sameStrings(t, "chart (values-full.yaml) vs config/overlays/cert-manager + config/prometheus", keys(chartFull(t).objs), withoutNamespace(full))

	// In another namespace, the same objects there.
	var moved []string
	for _, k := range keys(chartFull(t).objs) {
		moved = append(moved, strings.Replace(k, " "+operatorNS+"/", " "+elsewhereNS+"/", 1))
	}
	sameStrings(t, "chart in "+elsewhereNS, keys(chartElsewhere(t).objs), moved)

	// With the webhook, progress reports, leader election and secure
	// metrics off, only their objects go.
	var expected []string
	for _, k := range keys(chartDefault(t).objs) {
		switch k {
		case "Service " + operatorNS + "/paddlejob-webhook-service",
			"Service " + operatorNS + "/paddlejob-progress",
			"MutatingWebhookConfiguration.admissionregistration.k8s.io paddlejob-mutating-webhook-configuration",
			"ValidatingWebhookConfiguration.admissionregistration.k8s.io paddlejob-validating-webhook-configuration",
			"Secret " + operatorNS + "/paddlejob-webhook-certs",
			"Role.rbac.authorization.k8s.io " + operatorNS + "/paddlejob-operator-leader-election",
			"RoleBinding.rbac.authorization.k8s.io " + operatorNS + "/paddlejob-operator-leader-election",
			"ClusterRole.rbac.authorization.k8s.io paddlejob-metrics-reader":
			continue
		}
		expected = append(expected, k)
	}
	sameStrings(t, "chart (values-custom.yaml)", keys(chartCustom(t).objs), expected)
}

// The chart's Deployment with default values runs the pod config/default
// runs, and with values-full.yaml the pod of config/overlays/cert-manager
// plus the watched namespaces. Intended differences, and only these: the
// image tag (the chart's appVersion; config/ has latest), the chart's
// imagePullPolicy, and the chart's extra instance label on pods and in
// selectors.
func TestChartDeploymentIsConfigs(t *testing.T) {
	_, appVersion := chartMeta(t)
	for _, c := range []struct {
		config, chart rendering
		extraArgs     []string
	}{
		{configDefault(t), chartDefault(t), nil},
		{configCertManager(t), chartFull(t), []string{"--namespace=team-a,team-b"}},
	} {
		t.Run(c.chart.name, func(t *testing.T) {
			k, h := deployment(t, c.config), deployment(t, c.chart)
			equal(t, "replicas", nested(h.Object, "spec", "replicas"), nested(k.Object, "spec", "replicas"))
			kPod := copyMap(nested(k.Object, "spec", "template", "spec"))
			hPod := copyMap(nested(h.Object, "spec", "template", "spec"))
			kContainers, hContainers := slice(kPod, "containers"), slice(hPod, "containers")
			if len(kContainers) != len(hContainers) {
				t.Fatalf("%d containers, config/ has %d", len(hContainers), len(kContainers))
			}
			for i := range kContainers {
				kc, hc := kContainers[i].(map[string]any), hContainers[i].(map[string]any)
				kImage, hImage := str(kc, "image"), str(hc, "image")
				if repo, _, _ := strings.Cut(kImage, ":"); hImage != repo+":"+appVersion {
					t.Errorf("image %s: want config/'s repository %s with the chart's appVersion %s", hImage, repo, appVersion)
				}
				if p := str(hc, "imagePullPolicy"); p != "IfNotPresent" {
					t.Errorf("imagePullPolicy %q: want IfNotPresent", p)
				}
				for _, m := range []map[string]any{kc, hc} {
					delete(m, "image")
					delete(m, "imagePullPolicy")
				}
				// The chart's extra args come last.
				if hArgs, n := slice(hc, "args"), len(c.extraArgs); n > 0 && len(hArgs) >= n &&
					equal(t, "extra args", toStrings(hArgs[len(hArgs)-n:]), c.extraArgs) {
					hc["args"] = hArgs[:len(hArgs)-n]
				}
			}
			equal(t, "pod spec", hPod, kPod)

			// Pods carry config/'s labels; selectors select the pods.
			kLabels := stringMap(k.Object, "spec", "template", "metadata", "labels")
			hLabels := stringMap(h.Object, "spec", "template", "metadata", "labels")
			for l, v := range kLabels {
				if hLabels[l] != v {
					t.Errorf("pod label %s=%s of config/ missing from %v", l, v, hLabels)
				}
			}
			for _, r := range []rendering{c.config, c.chart} {
				for _, svc := range ofKind(r.objs, "Service") {
					selects(t, r, svc)
					if other := find(c.config.objs, "Service", svc.GetNamespace(), svc.GetName()); other != nil {
						equal(t, "Service "+svc.GetName()+" ports", slice(svc.Object, "spec", "ports"), slice(other.Object, "spec", "ports"))
					}
				}
			}
		})
	}
}

// selects checks that a Service (or the Deployment's own selector) selects
// the operator's pods.
func selects(t testing.TB, r rendering, svc *unstructured.Unstructured) {
	t.Helper()
	dep := deployment(t, r)
	pod := stringMap(dep.Object, "spec", "template", "metadata", "labels")
	for _, sel := range []map[string]string{stringMap(svc.Object, "spec", "selector"), stringMap(dep.Object, "spec", "selector", "matchLabels")} {
		if len(sel) == 0 {
			t.Errorf("%s: %s selects nothing", r.name, key(svc))
		}
		for l, v := range sel {
			if pod[l] != v {
				t.Errorf("%s: %s selects %s=%s, the pods have %v", r.name, key(svc), l, v, pod)
			}
		}
	}
}

// The ServiceMonitor scrapes the metrics Service's metrics port.
func TestServiceMonitorScrapesTheMetricsService(t *testing.T) {
	for _, r := range []rendering{chartFull(t), chartElsewhere(t)} {
		sm := mustFind(t, r, "ServiceMonitor", r.namespace, "paddlejob-operator")
		svc := mustFind(t, r, "Service", r.namespace, "paddlejob-operator-metrics")
		labels := stringMap(svc.Object, "metadata", "labels")
		for l, v := range stringMap(sm.Object, "spec", "selector", "matchLabels") {
			if labels[l] != v {
				t.Errorf("%s: the ServiceMonitor selects %s=%s, the metrics Service has %v", r.name, l, v, labels)
			}
		}
		if ns := slice(sm.Object, "spec", "namespaceSelector", "matchNames"); len(ns) != 1 || ns[0] != r.namespace {
			t.Errorf("%s: the ServiceMonitor looks in %v", r.name, ns)
		}
		endpoint := slice(sm.Object, "spec", "endpoints")[0]
		if p := str(endpoint, "port"); p != str(slice(svc.Object, "spec", "ports")[0], "name") {
			t.Errorf("%s: the ServiceMonitor scrapes port %q", r.name, p)
		}
		// The endpoint serves HTTPS to authorized scrapers: Prometheus
		// presents its token.
		if str(endpoint, "scheme") != "https" || str(endpoint, "bearerTokenFile") == "" {
			t.Errorf("%s: the ServiceMonitor scrapes %q without a token (%v)", r.name, str(endpoint, "scheme"), endpoint)
		}
	}
}

func copyMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

func toStrings(v []any) []string {
	var out []string
	for _, s := range v {
		out = append(out, fmt.Sprint(s))
	}
	return out
}

// sortedRules orders RBAC rules by their YAML, to compare them as sets.
func sortedRules(rules []any) []any {
	out := slices.Clone(rules)
	slices.SortFunc(out, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return out
}
