// Package install checks the two ways of installing the operator, the
// kustomize manifests under config/ and the Helm chart charts/paddlejob:
// that they carry what controller-gen generates (CRD, RBAC rules, webhooks),
// that they install the same objects, that the operator's pod is Pod
// Security "restricted", that every flag the chart passes is one the
// operator parses, and that a real API server accepts every object
// (server-side dry run).
//
// kustomize and helm are the pinned ones of hack/tools, built into bin/ when
// missing or older than hack/tools/go.mod (the first helm build takes a few
// minutes).
package install

import (
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

const (
	// releaseName is the Helm release the tests render.
	releaseName = "paddlejob"
	// operatorNS is config/default's namespace; the chart is rendered into
	// it too, so that the two renderings name the same objects.
	operatorNS = "paddlejob-system"
	// elsewhereNS is another release namespace, to see that the chart puts
	// everything there.
	elsewhereNS = "ml-platform"
)

var root = testenv.RepoRoot()

var readInputsOnce sync.Once

// readInputs reads the chart, config/ and hack/tools: helm and kustomize
// read them, not this process, and go test's cache must see them change.
func readInputs() {
	readInputsOnce.Do(func() {
		for _, dir := range []string{chartDir(), filepath.Join(root, "config"), filepath.Join(root, "hack", "tools")} {
			_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					_, _ = os.ReadFile(path)
				}
				return nil
			})
		}
	})
}

func chartDir() string { return filepath.Join(root, "charts", "paddlejob") }

// --- tools -------------------------------------------------------------

var (
	toolMu    sync.Mutex
	toolPaths = map[string]string{}
)

// toolBinary returns bin/<name>, building it from the hack/tools module as
// the Makefile does when it is missing or older than hack/tools/go.mod.
func toolBinary(t testing.TB, name, pkg string) string {
	t.Helper()
	readInputs()
	toolMu.Lock()
	defer toolMu.Unlock()
	if p, ok := toolPaths[name]; ok {
		return p
	}
	bin := filepath.Join(root, "bin", name)
	toolsDir := filepath.Join(root, "hack", "tools")
	if olderThan(bin, filepath.Join(toolsDir, "go.mod")) {
		start := time.Now()
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		// Built beside and renamed: another test binary may build it too.
		tmp := fmt.Sprintf("%s.tmp-%d", bin, os.Getpid())
		cmd := exec.Command("go", "build", "-o", tmp, pkg)
		cmd.Dir = toolsDir
		if out, err := cmd.CombinedOutput(); err != nil {
			_ = os.Remove(tmp)
			t.Fatalf("building %s from hack/tools: %v\n%s", name, err, out)
		}
		if err := os.Rename(tmp, bin); err != nil {
			t.Fatal(err)
		}
		t.Logf("built bin/%s from hack/tools in %s", name, time.Since(start).Round(time.Second))
	}
	toolPaths[name] = bin
	return bin
}

// olderThan says whether path is missing or older than ref.
func olderThan(path, ref string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return true
	}
	ri, err := os.Stat(ref)
	return err == nil && fi.ModTime().Before(ri.ModTime())
}

func helmBinary(t testing.TB) string { return toolBinary(t, "helm", "helm.sh/helm/v3/cmd/helm") }

func kustomizeBinary(t testing.TB) string {
	return toolBinary(t, "kustomize", "sigs.k8s.io/kustomize/kustomize/v5")
}

func run(t testing.TB, name string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// --- renderings --------------------------------------------------------

// rendering is one way of installing the operator, rendered to objects.
type rendering struct {
	name string
	// namespace is where the operator runs.
	namespace string
	objs      []*unstructured.Unstructured
	// certManager: cert-manager issues the webhook's certificate.
	certManager bool
	// webhook and leaderElection are on.
	webhook, leaderElection bool
	// noKueue: the Kueue integration is off (kueue.enabled false).
	noKueue bool
	// plainMetrics: the metrics are plain HTTP (metrics.secure false).
	plainMetrics bool
}

var (
	renderMu    sync.Mutex
	renderCache = map[string][]*unstructured.Unstructured{}
)

func cached(t testing.TB, key string, render func() []byte) []*unstructured.Unstructured {
	t.Helper()
	renderMu.Lock()
	defer renderMu.Unlock()
	if objs, ok := renderCache[key]; ok {
		return deepCopyAll(objs)
	}
	objs, err := decode(render())
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	renderCache[key] = objs
	return deepCopyAll(objs)
}

func deepCopyAll(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}

// kustomizeBuild renders a directory of config/.
func kustomizeBuild(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	return cached(t, "kustomize "+dir, func() []byte {
		return run(t, kustomizeBinary(t), "build", filepath.Join(root, "config", filepath.FromSlash(dir)))
	})
}

// helmTemplate renders the chart, CRDs included, into namespace with the
// values files of testdata.
func helmTemplate(t testing.TB, namespace string, valuesFiles ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", releaseName, chartDir(), "--namespace", namespace, "--include-crds"}
	for _, f := range valuesFiles {
		args = append(args, "--values", filepath.Join(root, "test", "install", "testdata", f))
	}
	return cached(t, strings.Join(args, " "), func() []byte { return run(t, helmBinary(t), args...) })
}

func configDefault(t testing.TB) rendering {
	return rendering{name: "config/default", namespace: operatorNS, objs: kustomizeBuild(t, "default"),
		webhook: true, leaderElection: true}
}

func configCertManager(t testing.TB) rendering {
	return rendering{name: "config/overlays/cert-manager", namespace: operatorNS, objs: kustomizeBuild(t, "overlays/cert-manager"),
		webhook: true, leaderElection: true, certManager: true}
}

// configPrometheus is config/prometheus alone: the ServiceMonitor.
func configPrometheus(t testing.TB) rendering {
	return rendering{name: "config/prometheus", namespace: operatorNS, objs: kustomizeBuild(t, "prometheus")}
}

func chartDefault(t testing.TB) rendering {
	return rendering{name: "chart (default values)", namespace: operatorNS, objs: helmTemplate(t, operatorNS),
		webhook: true, leaderElection: true}
}

// chartFull has cert-manager, the ServiceMonitor and watchNamespaces on.
func chartFull(t testing.TB) rendering {
	return rendering{name: "chart (values-full.yaml)", namespace: operatorNS, objs: helmTemplate(t, operatorNS, "values-full.yaml"),
		webhook: true, leaderElection: true, certManager: true}
}

// chartCustom has every other value set, the webhook and leader election off.
func chartCustom(t testing.TB) rendering {
	return rendering{name: "chart (values-custom.yaml)", namespace: operatorNS, objs: helmTemplate(t, operatorNS, "values-custom.yaml"), noKueue: true, plainMetrics: true}
}

// chartElsewhere is the chart with its optional parts on, in another namespace.
func chartElsewhere(t testing.TB) rendering {
	return rendering{name: "chart (values-full.yaml, namespace " + elsewhereNS + ")", namespace: elsewhereNS,
		objs: helmTemplate(t, elsewhereNS, "values-full.yaml"), webhook: true, leaderElection: true, certManager: true}
}

// operatorRenderings are the renderings that install the operator.
func operatorRenderings(t testing.TB) []rendering {
	return []rendering{configDefault(t), configCertManager(t), chartDefault(t), chartFull(t), chartCustom(t), chartElsewhere(t)}
}

// --- objects -----------------------------------------------------------

// key names an object: its kind and group, namespace and name.
func key(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	k := gvk.Kind
	if gvk.Group != "" {
		k += "." + gvk.Group
	}
	if ns := o.GetNamespace(); ns != "" {
		return k + " " + ns + "/" + o.GetName()
	}
	return k + " " + o.GetName()
}

func keys(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, key(o))
	}
	sort.Strings(out)
	return out
}

func ofKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// find returns the object of that kind, namespace and name, or nil.
func find(objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	return nil
}

func mustFind(t testing.TB, r rendering, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	o := find(r.objs, kind, namespace, name)
	if o == nil {
		t.Fatalf("%s: no %s %s/%s; it has:\n  %s", r.name, kind, namespace, name, strings.Join(keys(r.objs), "\n  "))
	}
	return o
}

// deployment is the operator's Deployment of a rendering.
func deployment(t testing.TB, r rendering) *unstructured.Unstructured {
	t.Helper()
	return mustFind(t, r, "Deployment", r.namespace, "paddlejob-operator")
}

// manager is the operator's container.
func manager(t testing.TB, r rendering) map[string]any {
	t.Helper()
	for _, c := range slice(deployment(t, r).Object, "spec", "template", "spec", "containers") {
		if m, _ := c.(map[string]any); m["name"] == "manager" {
			return m
		}
	}
	t.Fatalf("%s: the Deployment has no container named manager", r.name)
	return nil
}

func nested(o any, keys ...string) any {
	for _, k := range keys {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[k]
	}
	return o
}

func str(o any, keys ...string) string { s, _ := nested(o, keys...).(string); return s }

func slice(o any, keys ...string) []any { s, _ := nested(o, keys...).([]any); return s }

func mapOf(o any, keys ...string) map[string]any {
	m, _ := nested(o, keys...).(map[string]any)
	return m
}

func stringMap(o any, keys ...string) map[string]string {
	out := map[string]string{}
	for k, v := range mapOf(o, keys...) {
		out[k], _ = v.(string)
	}
	return out
}

func args(t testing.TB, r rendering) []string {
	t.Helper()
	var out []string
	for _, a := range slice(manager(t, r), "args") {
		out = append(out, fmt.Sprint(a))
	}
	return out
}

// readObjects decodes a file of the repository.
func readObjects(t testing.TB, rel string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(data)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return objs
}

// decode decodes manifests, with whole numbers as int64 as the API
// machinery's JSON decoding has them (YAML decoding gives float64).
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	objs, err := kube.DecodeManifests(data)
	for _, o := range objs {
		o.Object = integers(o.Object).(map[string]any)
	}
	return objs, err
}

func integers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = integers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = integers(e)
		}
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v)
		}
	}
	return v
}

// equal reports the differences between got and want, path by path.
func equal(t testing.TB, what string, got, want any) bool {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return true
	}
	diffs := differences("", got, want)
	if len(diffs) > 20 {
		diffs = append(diffs[:20], fmt.Sprintf("... and %d more", len(diffs)-20))
	}
	t.Errorf("%s differ:\n  %s", what, strings.Join(diffs, "\n  "))
	return false
}

// differences lists where got and want differ, as "path: got X, want Y".
func differences(path string, got, want any) []string {
	show := func(v any) string {
		if v == nil {
			return "(none)"
		}
		out, _ := yaml.Marshal(v)
		return strings.TrimSpace(string(out))
	}
	here := path
	if here == "" {
		here = "."
	}
	switch g := got.(type) {
	case map[string]any:
		w, ok := want.(map[string]any)
		if !ok {
			break
		}
		var out []string
		names := map[string]bool{}
		for k := range g {
			names[k] = true
		}
		for k := range w {
			names[k] = true
		}
		sorted := make([]string, 0, len(names))
		for k := range names {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			out = append(out, differences(path+"."+k, g[k], w[k])...)
		}
		return out
	case []any:
		w, ok := want.([]any)
		if !ok || len(w) != len(g) {
			break
		}
		var out []string
		for i := range g {
			out = append(out, differences(fmt.Sprintf("%s[%d]", path, i), g[i], w[i])...)
		}
		return out
	}
	if reflect.DeepEqual(got, want) {
		return nil
	}
	return []string{fmt.Sprintf("%s: got %s, want %s", here, show(got), show(want))}
}

// sameStrings reports the difference of two sets of strings.
func sameStrings(t testing.TB, what string, got, want []string) {
	t.Helper()
	var missing, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	if len(missing)+len(extra) > 0 {
		t.Errorf("%s: missing %q, unexpected %q", what, missing, extra)
	}
}

// chartMeta is the chart's Chart.yaml.
func chartMeta(t testing.TB) (version, appVersion string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir(), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c.Version, c.AppVersion
}
