//go:build integration

package launcher

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

// A real kube-apiserver and etcd, started by the first test that needs them
// and shared by all; no controllers run, so tests create a Job's pods and
// write their statuses the way the Job controller and a kubelet would.
var (
	planeOnce sync.Once
	plane     *testenv.Env
	planeErr  error
	nsCounter atomic.Int32
)

func TestMain(m *testing.M) {
	code := m.Run()
	if plane != nil {
		if err := plane.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	os.Exit(code)
}

// apiServer returns the shared control plane and an admin clientset.
func apiServer(t *testing.T) (*testenv.Env, kubernetes.Interface) {
	t.Helper()
	planeOnce.Do(func() { plane, planeErr = testenv.Start() })
	if planeErr != nil {
		t.Fatalf("starting the control plane: %v", planeErr)
	}
	cs, err := kubernetes.NewForConfig(plane.Config)
	if err != nil {
		t.Fatal(err)
	}
	return plane, cs
}

// newNamespace creates a namespace of its own for a test.
func newNamespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	name := fmt.Sprintf("launch-%d", nsCounter.Add(1))
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// createJob creates a batch/v1 Job like the three-node tutorial's.
func createJob(t *testing.T, cs kubernetes.Interface, ns, name string, parallelism int32) {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(parallelism),
			Completions: ptr.To(parallelism),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "trainer", Image: "paddle:mypaddle", Command: []string{"paddlejob", "launch"}}},
			}},
		},
	}
	if _, err := cs.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating job %s/%s: %v", ns, name, err)
	}
}

// createJobPod creates a pod of job labelled as batch/v1 labels it (label
// is "job-name" or "batch.kubernetes.io/job-name"), then writes phase and
// ip ("" for none) into its status as a kubelet would.
func createJobPod(t *testing.T, cs kubernetes.Interface, ns, job, name, label string, phase corev1.PodPhase, ip string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{label: job}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "trainer", Image: "paddle:mypaddle"}},
		},
	}
	created, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, name, err)
	}
	setPodStatus(t, cs, created, phase, ip)
}

// setPodStatus writes a pod's phase and IP as a kubelet would.
func setPodStatus(t *testing.T, cs kubernetes.Interface, p *corev1.Pod, phase corev1.PodPhase, ip string) {
	t.Helper()
	p.Status.Phase = phase
	p.Status.PodIP = ip
	p.Status.PodIPs = nil
	if ip != "" {
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	}
	if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the status of pod %s/%s: %v", p.Namespace, p.Name, err)
	}
}

func getPod(t *testing.T, cs kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
