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

	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// sandboxCluster is a running local cluster the sandbox checks probe, and
// what they need to know of the user running it.
type sandboxCluster struct {
	st *localcluster.State
	// pj is a client of the cluster, as the user who started it.
	pj *client.Client
	// home is the cluster's home, its state directory.
	home string
	// userHome is $HOME of the user running the cluster, which holds home;
	// secret is a file in it only that user may read.
	userHome, secret string
	// rootNode: the cluster runs as root.
	rootNode bool
	// podUID and podGID are who a pod runs as when its securityContext
	// names nobody; nodeUID and nodeGID who the node runs as on the host.
	podUID, podGID, nodeUID, nodeGID int
	// writableDir is a directory pods may mount read-write.
	writableDir string
	// kubeconfig is the user's kubeconfig, where up wrote the cluster's
	// context with its admin credentials.
	kubeconfig string
	// imageLinks are the links of linksImage's build context and their
	// targets (linksImageTable).
	imageLinks map[string]string
}

// What a pod of a root node sees of the host and may do: the cluster's
// state lives in the user's home (where `paddlejob up` keeps it by
// default), and the checks of checkSandbox run against it.
// TestSandboxAsNormalUser runs the same checks on a normal user's cluster.
func TestSandbox(t *testing.T) {
	t.Parallel()
	userHome, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(userHome, ".paddlejob-e2e-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &sandboxCluster{home: filepath.Join(dir, "cluster"), userHome: userHome, rootNode: true,
		podUID: node.DefaultSandboxUID, podGID: node.DefaultSandboxGID, writableDir: t.TempDir()}
	c.secret = writeSecret(t, userHome)
	o := opts
	o.Home = c.home
	// The user's kubeconfig, which up writes the admin credentials into,
	// beside the cluster's home (not ~/.kube/config, which is root's own).
	c.kubeconfig = filepath.Join(dir, "kube", "config")
	o.UserKubeconfig = kubeconfigAt(c.kubeconfig)
	o.ImageTable = linksImageTable(t, filepath.Join(dir, "links-image"), c)
	c.st, c.pj = withCluster(t, o)
	checkSandbox(t, c)
}

// checkSandbox is what a pod of the cluster can and cannot do
// (docs/local-node.md#isolation), each asked of the pod itself: reach the
// user's files and the cluster's state, through a hostPath or a build
// context's links; who it runs as, its capabilities, system calls and tmpfs
// sizes, and who owns its files on the host; its memory and pids limits, the control plane going on past a fork
// bomb; the etcds' ports; its network, and what it reaches of the machine's.
func checkSandbox(t *testing.T, c *sandboxCluster) {
	pj := c.pj
	if _, err := os.Stat(c.st.Kubeconfig()); err != nil {
		t.Fatalf("the cluster's admin kubeconfig is not where the probes look: %v", err)
	}
	t.Run("the host stays out of reach", func(t *testing.T) { probeHost(t, pj, c) })
	t.Run("a hostPath to the cluster's state is refused", func(t *testing.T) { probeStateHostPath(t, pj, c) })
	t.Run("a tenant's hostPaths of the kubeconfig, the host's etc, proc, sys, dev and a socket are refused", func(t *testing.T) { probeTenantHostPaths(t, pj, c) })
	t.Run("a FileOrCreate hostPath follows no link", func(t *testing.T) { probeFileOrCreateLink(t, pj, c) })
	t.Run("a PaddleJob's hostPath of the host's etc is refused", func(t *testing.T) { probePaddleJobHostPath(t, pj) })
	t.Run("PodSecurity baseline refuses a PaddleJob's host network, privilege and hostPath", func(t *testing.T) { probePodSecurity(t, pj) })
	t.Run("a build context's links arrive dangling", func(t *testing.T) { probeImageLinks(t, pj, c) })
	t.Run("identity, capabilities, system calls and tmpfs sizes", func(t *testing.T) { probeIdentity(t, pj, c) })
	t.Run("a pod's files in a writable hostPath are its uid's on the host (the user's on a normal user's node)", func(t *testing.T) { probeFileOwner(t, pj, c) })
	t.Run("runAsUser is honoured inside the user namespace", func(t *testing.T) { probeRunAsUser(t, pj) })
	t.Run("the kernel's settings are out of a pod's reach, the host's processes out of its sight", func(t *testing.T) { probeKernelKnobs(t, pj) })
	t.Run("a pod is neither the host's root nor the node's user on a root node", func(t *testing.T) { probeHostUID(t, pj, c) })
	t.Run("pods of different uids and jobs share a writable hostPath", func(t *testing.T) { probeSharedHostPath(t, pj, c) })
	t.Run("a pod writes root's directory as a container's root but leaves nothing set-user-ID", func(t *testing.T) { probeSetID(t, pj, c) })
	t.Run("a memory limit is enforced", func(t *testing.T) { probeMemoryLimit(t, pj) })
	t.Run("a fork bomb stops at its pids limit and the cluster goes on", func(t *testing.T) { probeForkBomb(t, pj) })
	t.Run("the etcds refuse pods without credentials", func(t *testing.T) { probeEtcds(t, pj, c.st) })
	t.Run("pods have networks of their own, Services and cluster DNS", func(t *testing.T) { probePodNetwork(t, pj) })
	t.Run("of the machine a pod reaches the cluster network's forwards only", func(t *testing.T) { probeMachine(t, pj, c.st) })
	t.Run("a hostNetwork pod bound to the cluster DNS address gets no query", func(t *testing.T) { probeDNSSquatter(t, pj) })
	t.Run("a pod of one job reaches none of another job's elastic etcd keys", func(t *testing.T) { probeEtcdOtherJob(t, pj) })
	t.Run("a memory limit above the node's allocatable runs capped to it", func(t *testing.T) { probeMemoryAboveTheNode(t, pj) })
	t.Run("an emptyDir written past its sizeLimit is evicted", func(t *testing.T) { probeEmptyDirEviction(t, pj) })
}

// writeSecret writes a file only its owner may read in dir (the owner is
// the user running the cluster, who may have to be given it).
func writeSecret(t *testing.T, dir string) string {
	t.Helper()
	f, err := os.CreateTemp(dir, ".paddlejob-e2e-secret-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(f.Name()) })
	if _, err := f.WriteString("the user's secret"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name() // CreateTemp's mode is 0600
}

// hostProbe runs commands that must fail; BLOCKED or LEAK says how each
// went: reading the cluster's state, its admin kubeconfig and CA key, a
// private file of the user's, the host's password hashes, and making the
// system writable. The pod's HOME is its own.
const hostProbe = `
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

// probeHost runs hostProbe in a pod and checks every attempt was blocked.
func probeHost(t *testing.T, pj *client.Client, c *sandboxCluster) {
	ns := newNamespace(t, pj)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "probe", Image: "busybox:1.36", Command: []string{"sh", "-c", hostProbe},
				Env: []corev1.EnvVar{{Name: "STATE", Value: c.home}, {Name: "SECRET", Value: c.secret}},
			}},
		},
	}
	done, log := runPodToEnd(t, pj, pod)
	phase := done.Status.Phase
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

// runPodToEnd creates a pod, waits for it to succeed or fail, and returns
// it with its log (also logged).
func runPodToEnd(t *testing.T, pj *client.Client, pod *corev1.Pod) (*corev1.Pod, string) {
	t.Helper()
	if _, err := pj.Clientset().CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := awaitPodEnd(t, pj, pod.Namespace, pod.Name)
	log := podLog(t, pj, pod.Namespace, pod.Name)
	t.Logf("%s:\n%s", pod.Name, log)
	return done, log
}

// awaitPodEnd waits for a pod to succeed or fail and returns it.
func awaitPodEnd(t *testing.T, pj *client.Client, ns, name string) *corev1.Pod {
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
func probeMemoryLimit(t *testing.T, pj *client.Client) {
	ns := newNamespace(t, pj)
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
	done := awaitPodEnd(t, pj, ns, pod.Name)
	if len(done.Status.ContainerStatuses) != 1 || done.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("container status %+v", done.Status.ContainerStatuses)
	}
	term := done.Status.ContainerStatuses[0].State.Terminated
	t.Logf("the hog ended: %s, exit code %d", term.Reason, term.ExitCode)
	if term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("the hog ended %s with exit code %d, want OOMKilled with 137 (the kernel's SIGKILL)", term.Reason, term.ExitCode)
	}
}
