package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// What a pod is on the process node (docs/local-node.md#isolation): who it
// runs as, what the kernel lets it do, how big its /tmp and /dev/shm are,
// and how many processes it may have, each asked of the pod itself. The
// probes are checks of checkSandbox, run on a root node's cluster and a
// normal user's.

// identityProbe reports the pod's uid and gid, its effective capabilities,
// what each system call Docker's default profile refuses returned, and the
// sizes of /tmp and /dev/shm. System calls are made with harmless arguments:
// where one were allowed it would fail on them (reboot's magic, a missing
// swap file) or do nothing outside the pod's own mounts.
const identityProbe = `
import ctypes, errno, os, platform
libc = ctypes.CDLL(None, use_errno=True)
print("UID", os.getuid(), "GID", os.getgid())
print("UIDMAP", " ".join(open("/proc/self/uid_map").read().split()))
for line in open("/proc/self/status"):
    if line.startswith("CapEff:"):
        print("CAPEFF", line.split()[1])
nr = {
    "x86_64": {"keyctl": 250, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "kexec_load": 246,
               "init_module": 175, "open_by_handle_at": 304, "reboot": 169, "swapon": 167},
    "aarch64": {"keyctl": 219, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "kexec_load": 104,
                "init_module": 105, "open_by_handle_at": 265, "reboot": 142, "swapon": 224},
}[platform.machine()]
def attempt(name, call):
    ctypes.set_errno(0)
    ret = call()
    print("SYSCALL", name, "allowed" if ret >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
uts = os.open("/proc/self/ns/uts", os.O_RDONLY)
attempt("unshare(CLONE_NEWUSER)", lambda: libc.unshare(0x10000000))
attempt("unshare(CLONE_NEWNS)", lambda: libc.unshare(0x00020000))
attempt("mount", lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
attempt("umount2", lambda: libc.umount2(b"/tmp", 2))
attempt("setns", lambda: libc.setns(uts, 0))
attempt("keyctl", lambda: libc.syscall(nr["keyctl"], 0, -3, 0))
attempt("bpf", lambda: libc.syscall(nr["bpf"], 0, None, 0))
attempt("perf_event_open", lambda: libc.syscall(nr["perf_event_open"], None, 0, -1, -1, 0))
attempt("userfaultfd", lambda: libc.syscall(nr["userfaultfd"], 0))
attempt("kexec_load", lambda: libc.syscall(nr["kexec_load"], 0, 0, None, 0))
attempt("init_module", lambda: libc.syscall(nr["init_module"], None, 0, b""))
attempt("open_by_handle_at", lambda: libc.syscall(nr["open_by_handle_at"], -1, None, 0))
attempt("reboot", lambda: libc.syscall(nr["reboot"], 0, 0, 0, None))
attempt("swapon", lambda: libc.syscall(nr["swapon"], b"/nonexistent-swap", 0))
for d in ("/tmp", "/dev/shm", "/cache"):
    st = os.statvfs(d)
    print("SIZE", d, st.f_blocks * st.f_frsize)
`

// runProbe runs a Python program in a pod of its own and returns its log.
// Its /cache is a memory-backed emptyDir of cacheSize bytes.
func runProbe(t *testing.T, pj *client.Client, name, program string, sc *corev1.PodSecurityContext) string {
	t.Helper()
	ns := newNamespace(t, pj)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:   corev1.RestartPolicyNever,
			SecurityContext: sc,
			Containers: []corev1.Container{{
				Name: "probe", Image: "paddlepaddle/paddle:3.0.0", Command: []string{"python3", "-c", program},
				VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}},
			}},
			Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(cacheSize, resource.BinarySI),
			}}}},
		},
	}
	done, log := runPodToEnd(t, pj, pod)
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the probe pod ended %s", done.Status.Phase)
	}
	return log
}

// cacheSize is the sizeLimit of the probes' memory-backed emptyDir.
const cacheSize = 48 << 20

func probeIdentity(t *testing.T, pj *client.Client, c *sandboxCluster) {
	log := runProbe(t, pj, "identity", identityProbe, nil)
	// A root node runs pods as root in the pod (the user of Paddle's
	// images), a normal user's node as that user; neither is the host's
	// root (probeHostUID).
	if want := fmt.Sprintf("UID %d GID %d\n", c.podUID, c.podGID); !strings.Contains(log, want) {
		t.Errorf("the pod does not report %q", strings.TrimSpace(want))
	}
	// Its user namespace maps it to one id only: on a root node, the
	// base of the node's range, seen from the host.
	if c.rootNode {
		if want := fmt.Sprintf("UIDMAP %d %d 1\n", c.podUID, podHostUID(t, pj, c, int64(c.podUID))); !strings.Contains(log, want) {
			t.Errorf("the pod's uid_map is not %q:\n%s", strings.TrimSpace(want), log)
		}
	}
	if !strings.Contains(log, "CAPEFF 0000000000000000") {
		t.Error("the pod has effective capabilities")
	}
	for _, call := range []string{"unshare(CLONE_NEWUSER)", "unshare(CLONE_NEWNS)", "mount", "umount2", "setns", "keyctl", "bpf",
		"perf_event_open", "userfaultfd", "kexec_load", "init_module", "open_by_handle_at", "reboot", "swapon"} {
		if !strings.Contains(log, "SYSCALL "+call+" EPERM\n") {
			t.Errorf("%s did not fail with EPERM", call)
		}
	}
	sizes := map[string]int{"/tmp": node.DefaultTmpSize, "/dev/shm": node.DefaultShmSize}
	if c.rootNode {
		// Only a root node can mount the volume's tmpfs.
		sizes["/cache"] = cacheSize
	}
	for dir, size := range sizes {
		if want := fmt.Sprintf("SIZE %s %d\n", dir, size); !strings.Contains(log, want) {
			t.Errorf("%s is not the configured %d bytes", dir, size)
		}
	}
}

func probeRunAsUser(t *testing.T, pj *client.Client) {
	log := runProbe(t, pj, "run-as", `import os; print("UID", os.getuid(), "GID", os.getgid())`,
		&corev1.PodSecurityContext{RunAsUser: ptr.To[int64](4321), RunAsGroup: ptr.To[int64](4322)})
	if !strings.Contains(log, "UID 4321 GID 4322") {
		t.Error("the pod does not run as its securityContext's runAsUser and runAsGroup")
	}
}

// forkBomb forks a binary tree of shells 12 levels deep, whose 4096 leaves
// sleep: 8191 processes, twice the default pids limit, yet few enough that
// a node without a limit (the test failing) leaves the machine standing.
// The shell (dash) reports a fork the kernel refused as "Cannot fork".
const forkBomb = `
bomb() {
  if [ "$1" -eq 0 ]; then exec sleep 3600; fi
  bomb $(($1 - 1)) &
  bomb $(($1 - 1)) &
  wait
}
bomb 12
`

func probeForkBomb(t *testing.T, pj *client.Client) {
	ctx := context.Background()
	ns := newNamespace(t, pj)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "bomb", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "bomb", Image: "busybox:1.36", Command: []string{"sh", "-c", forkBomb}}},
		},
	}
	if _, err := pj.Clientset().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pj.Clientset().CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
	})
	// The kernel refuses the bomb's forks past its limit.
	poll(t, 3*time.Minute, "the bomb's forks are refused", func() (bool, string) {
		p, err := pj.Clientset().CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Status.Phase != corev1.PodRunning {
			return false, statusLine(p)
		}
		log := podLog(t, pj, ns, pod.Name)
		return strings.Contains(log, "Cannot fork"), fmt.Sprintf("%s, log %q", statusLine(p), lastLine(log))
	})
	// While it holds every process it may have, the API server answers and
	// a job runs to completion: Paddle reports its version.
	if v, err := pj.Clientset().Discovery().ServerVersion(); err != nil {
		t.Fatalf("the API server does not answer during the fork bomb: %v", err)
	} else {
		t.Logf("the API server answers during the fork bomb: %s", v.GitVersion)
	}
	job := testutil.MakePaddleJob("after-bomb", "").Workers(1).Image("paddlepaddle/paddle:3.0.0").CleanPodPolicy(paddlev1.CleanPodPolicyNever).
		Command(paddlev1.ReplicaWorker, "python3", "-c", "import paddle; print('paddle', paddle.__version__)").Obj()
	done := runToEnd(t, pj, job)
	mustComplete(t, pj, done)
	if log := podLog(t, pj, done.Namespace, paddlev1.PodName(job.Name, paddlev1.ReplicaWorker, 0)); !strings.Contains(log, "paddle 3.0.0") {
		t.Errorf("the job's worker did not report Paddle 3.0.0: %q", log)
	}
	// The bomb goes with its pod.
	if err := pj.Clientset().CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, time.Minute, "the bomb's pod is gone", func() (bool, string) {
		_, err := pj.Clientset().CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

// The local API server runs the PodSecurity admission plugin: a namespace
// labelled for the baseline level refuses a privileged pod, naming the
// level, as on any Kubernetes cluster (docs/local-node.md#isolation says
// why the local cluster labels none itself).
func TestPodSecurityAdmission(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	ctx := context.Background()
	ns := newNamespace(t, pj)
	namespace, err := pj.Clientset().CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	namespace.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	if _, err := pj.Clientset().CoreV1().Namespaces().Update(ctx, namespace, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "privileged", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "busybox:1.36", Command: []string{"true"},
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		}}},
	}
	_, err = pj.Clientset().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "baseline`) {
		t.Fatalf("creating a privileged pod in a baseline namespace: %v, want it forbidden by PodSecurity baseline", err)
	}
	t.Logf("refused: %v", err)
}
