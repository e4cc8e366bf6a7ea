package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What a pod of the local cluster sees of the host: a cluster whose state
// lives in the user's home (where `paddlejob up` keeps it by default), and a
// pod that tries to read that state, the admin kubeconfig, a private file
// of the user's, the host's password hashes, and to make the system
// writable. Each attempt must fail; the pod's HOME is its own. And a pod
// that allocates past its memory limit is killed, OOMKilled.
func TestSandbox(t *testing.T) {
	userHome, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	home, err := os.MkdirTemp(userHome, ".paddlejob-e2e-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	secret := filepath.Join(userHome, ".paddlejob-e2e-secret-"+filepath.Base(home))
	if err := os.WriteFile(secret, []byte("the user's secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(secret) })

	o := opts
	o.Home = filepath.Join(home, "cluster")
	st := withCluster(t, o)
	if _, err := os.Stat(st.Kubeconfig()); err != nil {
		t.Fatalf("the cluster's admin kubeconfig is not where the probe looks: %v", err)
	}

	// Each check runs a command that must fail; BLOCKED or LEAK says how it went.
	const probe = `
fail=0
check() {
  if sh -c "$2" >/dev/null 2>&1; then echo "LEAK $1"; fail=1; else echo "BLOCKED $1"; fi
}
command -v mount >/dev/null || { echo "NO mount command"; fail=1; }
check state-dir "ls $STATE/pki"
check admin-kubeconfig "cat $STATE/kubeconfig"
check ca-key "cat $STATE/pki/ca.key"
check user-secret "cat $SECRET"
check shadow "cat /etc/shadow"
check remount "mount -o remount,rw /usr"
check write-usr "touch /usr/.paddlejob-probe"
if [ "$HOME" = /root ] && echo ok > "$HOME/probe" && [ "$(cat "$HOME/probe")" = ok ]; then echo "HOME private $HOME"; else echo "HOME wrong $HOME"; fail=1; fi
exit $fail
`
	t.Run("the host stays out of reach", func(t *testing.T) { probeHost(t, o.Home, secret, probe) })
	t.Run("a memory limit is enforced", probeMemoryLimit)
}

// probeHost runs the probe in a pod and checks every attempt was blocked.
func probeHost(t *testing.T, state, secret, probe string) {
	ns := newNamespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "probe", Image: "busybox:1.36", Command: []string{"sh", "-c", probe},
				Env: []corev1.EnvVar{{Name: "STATE", Value: state}, {Name: "SECRET", Value: secret}},
			}},
		},
	}
	ctx := context.Background()
	if _, err := pj.Clientset().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	phase := awaitPodEnd(t, ns, pod.Name).Status.Phase
	log := podLog(t, ns, pod.Name)
	t.Logf("probe:\n%s", log)
	for _, want := range []string{"BLOCKED state-dir", "BLOCKED admin-kubeconfig", "BLOCKED ca-key", "BLOCKED user-secret",
		"BLOCKED shadow", "BLOCKED remount", "BLOCKED write-usr", "HOME private /root"} {
		if !strings.Contains(log, want) {
			t.Errorf("the probe did not report %q", want)
		}
	}
	if phase != corev1.PodSucceeded {
		t.Errorf("the probe pod %s: something of the host leaked", phase)
	}
}

// awaitPodEnd waits for a pod to succeed or fail and returns it.
func awaitPodEnd(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	poll(t, 2*time.Minute, "pod "+name+" ends", func() (bool, string) {
		p, err := pj.Clientset().CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, string(p.Status.Phase)
	})
	return pod
}

// probeMemoryLimit runs a program that writes 512 MiB under a 64 MiB limit:
// the kernel kills it and the container ends OOMKilled, the machine
// untouched.
func probeMemoryLimit(t *testing.T) {
	ns := newNamespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hog", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "hog", Image: "paddlepaddle/paddle:3.0.0",
				Command: []string{"python3", "-c", "import sys; data = bytes(range(256)) * (2 << 20); print(len(data)); sys.exit(3)"},
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("1")},
				},
			}},
		},
	}
	if _, err := pj.Clientset().CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := awaitPodEnd(t, ns, pod.Name)
	if len(done.Status.ContainerStatuses) != 1 || done.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("container status %+v", done.Status.ContainerStatuses)
	}
	term := done.Status.ContainerStatuses[0].State.Terminated
	t.Logf("the hog ended: %s, exit code %d", term.Reason, term.ExitCode)
	if term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("the hog ended %s with exit code %d, want OOMKilled with 137 (the kernel's SIGKILL)", term.Reason, term.ExitCode)
	}
}
