package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

// waitTimeout bounds every wait for the operator to react.
const waitTimeout = 30 * time.Second

func ctx(t testing.TB) context.Context { return t.Context() }

// newNamespace creates a namespace for one test.
func newNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "it-"}}
	if err := k8s.Create(ctx(t), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// loadJob reads the PaddleJob of a YAML file (other documents are skipped).
func loadJob(t *testing.T, path string) *paddlev1.PaddleJob {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind != "PaddleJob" {
			continue
		}
		// Strict, as kubectl's server-side field validation would be: the YAML
		// must be accepted exactly as written.
		var job paddlev1.PaddleJob
		if err := yaml.UnmarshalStrict(doc, &job); err != nil {
			t.Fatalf("%s does not match the PaddleJob API: %v", path, err)
		}
		return &job
	}
	t.Fatalf("no PaddleJob in %s", path)
	return nil
}

// eventually polls cond until it holds or waitTimeout passes.
func eventually(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last error: %v)", waitTimeout, what, lastErr)
}

func getJob(t testing.TB, ns, name string) *paddlev1.PaddleJob {
	t.Helper()
	job := &paddlev1.PaddleJob{}
	if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: name}, job); err != nil {
		t.Fatal(err)
	}
	return job
}

// waitForPhase waits for the job's phase and returns the job.
func waitForPhase(t testing.TB, ns, name string, phase paddlev1.PaddleJobPhase) *paddlev1.PaddleJob {
	t.Helper()
	var job *paddlev1.PaddleJob
	eventually(t, fmt.Sprintf("PaddleJob %s to be %s", name, phase), func() (bool, error) {
		job = getJob(t, ns, name)
		return job.Status.Phase == phase, fmt.Errorf("phase %q, conditions %+v", job.Status.Phase, job.Status.Conditions)
	})
	return job
}

// listPods lists the job's pods, sorted by name.
func listPods(t testing.TB, ns, job string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := k8s.List(ctx(t), &list, client.InNamespace(ns), client.MatchingLabels{paddlev1.LabelJobName: job}); err != nil {
		t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// waitForPods waits until the job has exactly the named pods (terminating
// pods count until they are gone) and returns them by name.
func waitForPods(t testing.TB, ns, job string, names ...string) map[string]corev1.Pod {
	t.Helper()
	sort.Strings(names)
	var pods []corev1.Pod
	eventually(t, fmt.Sprintf("pods %v of %s", names, job), func() (bool, error) {
		pods = listPods(t, ns, job)
		var have []string
		for _, p := range pods {
			have = append(have, p.Name)
		}
		return strings.Join(have, ",") == strings.Join(names, ","), fmt.Errorf("have %v", have)
	})
	out := map[string]corev1.Pod{}
	for _, p := range pods {
		out[p.Name] = p
	}
	return out
}

// podNames are the pod names of a job: <job>-<role>-<i>.
func podNames(job string, ps, workers, heter int) []string {
	var out []string
	for rt, n := range map[paddlev1.ReplicaType]int{paddlev1.ReplicaPS: ps, paddlev1.ReplicaWorker: workers, paddlev1.ReplicaHeter: heter} {
		for i := 0; i < n; i++ {
			out = append(out, paddlev1.PodName(job, rt, i))
		}
	}
	return out
}

// setPodStatus writes a pod's status as a kubelet would, retrying conflicts.
func setPodStatus(t testing.TB, ns, name string, mutate func(*testutil.PodWrapper) *testutil.PodWrapper) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod := &corev1.Pod{}
		if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: name}, pod); err != nil {
			return err
		}
		updated := mutate(testutil.WrapPod(pod)).Obj()
		return k8s.Status().Update(ctx(t), updated)
	})
	if err != nil {
		t.Fatalf("writing status of pod %s: %v", name, err)
	}
}

// assignIPs gives pods IPs while they wait in their init containers, as a
// kubelet does once their sandboxes exist.
func assignIPs(t *testing.T, ns string, ips map[string]string) {
	t.Helper()
	for name, ip := range ips {
		setPodStatus(t, ns, name, func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Pending(ip) })
	}
}

// resolvedEnv resolves the first container's environment of a pod against the
// API server's current objects, as a kubelet starting it would.
func resolvedEnv(t *testing.T, ns, name string) (map[string]string, error) {
	t.Helper()
	pod := &corev1.Pod{}
	if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: name}, pod); err != nil {
		return nil, err
	}
	var cms corev1.ConfigMapList
	if err := k8s.List(ctx(t), &cms, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	data := map[string]map[string]string{}
	for _, cm := range cms.Items {
		data[cm.Name] = cm.Data
	}
	return testutil.ResolveEnv(pod, &pod.Spec.Containers[0], data)
}

// waitReleased waits until the operator has released the pod to start:
// its endpoints annotation matches the published ConfigMap's version.
func waitReleased(t *testing.T, ns, job, pod string) {
	t.Helper()
	eventually(t, "pod "+pod+" to be released", func() (bool, error) {
		p := &corev1.Pod{}
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: pod}, p); err != nil {
			return false, err
		}
		if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: job + "-endpoints"}, cm); err != nil {
			return false, err
		}
		v := p.Annotations[paddlev1.AnnotationEndpoints]
		return v != "" && v == cm.Data["version"], fmt.Errorf("pod has %q, ConfigMap %q", v, cm.Data["version"])
	})
}

// releaseAll waits until the operator has released every named pod. A
// server (ps, heter) is brought to Running and Ready once released, as a
// kubelet whose readiness probe passed would: the operator releases the
// pods that connect to servers only then, so servers go first.
func releaseAll(t *testing.T, ns, job string, names []string) {
	t.Helper()
	for _, role := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaHeter, paddlev1.ReplicaWorker} {
		for _, n := range names {
			p := &corev1.Pod{}
			if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: n}, p); err != nil {
				t.Fatal(err)
			}
			if p.Labels[paddlev1.LabelReplicaType] != string(role) {
				continue
			}
			// A pod without the wait container (addressed by name, waiting
			// for no server) starts at once.
			if slices.ContainsFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == paddlev1.ReservedInitContainer }) {
				waitReleased(t, ns, job, n)
			}
			if role != paddlev1.ReplicaWorker {
				setPodStatus(t, ns, n, func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Running(p.Status.PodIP) })
			}
		}
	}
}

func createJob(t testing.TB, job *paddlev1.PaddleJob) {
	t.Helper()
	if err := k8s.Create(ctx(t), job); err != nil {
		t.Fatalf("creating PaddleJob %s: %v", job.Name, err)
	}
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// createOthers creates the objects of a manifest other than its PaddleJob.
func createOthers(t *testing.T, ns, path string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kube.DecodeManifests(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "PaddleJob" {
			continue
		}
		o.SetNamespace(ns)
		if err := k8s.Create(ctx(t), o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// setPodGroupPhase writes a Volcano PodGroup's status phase, as Volcano would.
func setPodGroupPhase(t *testing.T, ns, name, phase string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pg := &unstructured.Unstructured{}
		pg.SetGroupVersionKind(schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"})
		if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: name}, pg); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(pg.Object, phase, "status", "phase"); err != nil {
			return err
		}
		return k8s.Status().Update(ctx(t), pg)
	})
	if err != nil {
		t.Fatalf("setting PodGroup %s to %s: %v", name, phase, err)
	}
}

// waitForCondition waits for a job condition's status and reason.
func waitForCondition(t *testing.T, ns, name, condType string, status metav1.ConditionStatus, reason string) *paddlev1.PaddleJob {
	t.Helper()
	var job *paddlev1.PaddleJob
	eventually(t, fmt.Sprintf("%s condition %s=%s (%s)", name, condType, status, reason), func() (bool, error) {
		job = getJob(t, ns, name)
		c := meta.FindStatusCondition(job.Status.Conditions, condType)
		return c != nil && c.Status == status && c.Reason == reason, fmt.Errorf("conditions %+v", job.Status.Conditions)
	})
	return job
}
