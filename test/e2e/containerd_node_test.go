package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
	"github.com/paddlejob/paddlejob/internal/localcluster/runtimenode"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// The container-runtime node (docs/local-cluster.md#node-runtimes): `up
// --node-runtime=containerd` runs the real kubelet of the control plane's
// release with containerd and runc. A pod of the Debian image built on this
// machine runs in runc's cgroups under the kubelet's kubepods, on
// containerd's overlay snapshot, as an unprivileged uid of the host (in a
// user namespace), with an IP of the node's pod CIDR; it
// resolves and reaches the API server's Service; its log is read through
// the kubelet's API. A user's first parameter-server program trains there on
// the node's Paddle images (3.0.0 and 2.6.2), and seed 004's five examples
// (the fourth placed by the real Volcano scheduler) on their images, built from the examples' Dockerfiles, with the GPUs of the
// node's device plugin, and seed 000's and 001's batch/v1 Jobs (the latter
// with the in-pod launcher, which finds its peers through the API server);
// a new user's program from paddlejob init runs from its build context.
// Down leaves no process, mount or cgroup of it
// behind.
func TestContainerdNode(t *testing.T) {
	t.Parallel()
	home, err := os.MkdirTemp("", "pj-containerd-") // short: the home holds Unix sockets
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkNothingLeft(t, home) }) // runs after withCluster's down
	o := opts
	o.Home, o.NodeRuntime = home, localcluster.NodeRuntimeContainerd
	o.With = []string{localcluster.AddonVolcano} // example 4's gang scheduler
	st, pj := withCluster(t, o)

	t.Run("the Node is the kubelet's, on containerd", func(t *testing.T) { checkRuntimeNodeInfo(t, pj) })
	t.Run("a pod runs in runc, resolves and reaches the API server", func(t *testing.T) { checkRuntimePod(t, pj, home) })
	t.Run("a user's first parameter-server program runs on Paddle's images", func(t *testing.T) {
		for _, release := range runtimenode.PaddleReleases {
			t.Run("Paddle "+release, func(t *testing.T) {
				t.Parallel()
				checkRuntimeNodePS(t, pj, release)
			})
		}
	})
	t.Run("seed 004's examples run as written", func(t *testing.T) { runPaddleOperatorExamples(t, pj) })
	t.Run("seed 004's example 4 with Volcano", func(t *testing.T) { runVolcanoWideAndDeepExample(t, st, pj) })
	t.Run("seed 000's single-node Job", func(t *testing.T) { runSingleNodeBatchJob(t, pj) })
	t.Run("seed 001's three-node Job with the launcher", func(t *testing.T) { runThreeNodeBatchJob(t, pj, newNamespace(t, pj), "") })
	t.Run("paddlejob init's starter runs from its build context", func(t *testing.T) { checkRuntimeNodeYourProgram(t, pj, st, home) })
	t.Run("host paths up did not allow are refused", func(t *testing.T) { checkRuntimeNodeHostPaths(t, pj, o) })
}

// checkRuntimeNodeHostPaths: the kubelet would mount any hostPath; the
// cluster's admission policy refuses, before the pod is stored, a path
// outside the directories up allowed, a read-only one mounted read-write
// and the cluster's home, naming the allowed ones (a path through ".." the
// API server's validation refuses itself).
func checkRuntimeNodeHostPaths(t *testing.T, pj *client.Client, o localcluster.Options) {
	rw, ro := podsDir(t), o.HostPathRO[0]
	for _, tc := range []struct {
		path     string
		readOnly bool
		allowed  bool
		// byAPI: the API server's own validation refuses it first.
		byAPI bool
	}{
		{path: rw, allowed: true},
		{path: ro, readOnly: true, allowed: true},
		{path: ro},
		{path: "/", readOnly: true},
		{path: "/etc", readOnly: true},
		{path: rw + "/../../etc", readOnly: true, byAPI: true},
		{path: o.Home, readOnly: true},
	} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "host-path-", Namespace: "default"},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: tc.path}}}},
				Containers: []corev1.Container{{Name: "c", Image: runtimenode.BaseImage, Command: []string{"true"},
					VolumeMounts: []corev1.VolumeMount{{Name: "host", MountPath: "/host", ReadOnly: tc.readOnly}}}}},
		}
		_, err := pj.Clientset().CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case tc.allowed && err != nil:
			t.Errorf("hostPath %s (readOnly %v) refused: %v", tc.path, tc.readOnly, err)
		case !tc.allowed && err == nil:
			t.Errorf("hostPath %s (readOnly %v) accepted", tc.path, tc.readOnly)
		case !tc.allowed && !tc.byAPI && !strings.Contains(err.Error(), "--host-path-rw DIR"):
			t.Errorf("hostPath %s refused without naming what is allowed: %v", tc.path, err)
		}
	}
}

// checkRuntimeNodePS runs the first-run test's unmodified minimal program
// (2 pservers, 2 trainers, withGloo 1, seed 004's setting) on the Paddle
// image of each release built for the node, side by side: the kubelet runs
// the operator's pods as written (its init container, its Gloo store
// sidecar, its readiness probes) and Paddle reports each role and learns.
func checkRuntimeNodePS(t *testing.T, pj *client.Client, release string) {
	job := minimalPSJob(t, release, 1)
	job.Namespace = newNamespace(t, pj)
	start := time.Now()
	createJobAsWritten(t, pj, job)
	done, logs := awaitCompletion(t, pj, job, start)
	if done.Status.RestartCount != 0 {
		t.Errorf("restartCount %d, want 0: the first run must work", done.Status.RestartCount)
	}
	checkMinimalPS(t, done, release, true, logs)
}

func checkRuntimeNodeInfo(t *testing.T, pj *client.Client) {
	n, err := pj.Clientset().CoreV1().Nodes().Get(context.Background(), localcluster.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info := n.Status.NodeInfo
	if want := "containerd://" + strings.TrimPrefix(kubebin.Containerd.Version, "v"); info.ContainerRuntimeVersion != want {
		t.Errorf("container runtime %q, want %q", info.ContainerRuntimeVersion, want)
	}
	if info.KubeletVersion != kubebin.KubernetesVersion {
		t.Errorf("kubelet %q, want %q", info.KubeletVersion, kubebin.KubernetesVersion)
	}
	var ready bool
	for _, c := range n.Status.Conditions {
		ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	}
	if gpus := n.Status.Capacity["nvidia.com/gpu"]; gpus.Value() != 4 {
		t.Errorf("nvidia.com/gpu capacity %s, want the 4 of up --gpus 4 (the node's device plugin)", gpus.String())
	}
	if !ready || n.Status.Addresses[0].Address != "172.18.0.2" {
		t.Errorf("node not Ready at 172.18.0.2: %+v %+v", n.Status.Conditions, n.Status.Addresses)
	}
}

// runtimePodScript prints what the pod sees, one fact per line.
const runtimePodScript = `echo "cgroup $(head -1 /proc/self/cgroup)"
echo "uidmap $(cat /proc/self/uid_map)"
echo "root $(awk '$5 == "/"' /proc/self/mountinfo | sed 's/.* - //')"
echo "ip $(hostname -i)"
getent hosts kubernetes.default.svc.cluster.local | sed 's/^/dns /'
timeout 5 bash -c "echo > /dev/tcp/$KUBERNETES_SERVICE_HOST/$KUBERNETES_SERVICE_PORT" && echo "api reached"`

func checkRuntimePod(t *testing.T, pj *client.Client, home string) {
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "on-runc", Namespace: "default"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "debian", Image: runtimenode.BaseImage, ImagePullPolicy: corev1.PullNever,
			Command: []string{"bash", "-c", runtimePodScript},
		}}},
	}
	created, err := pj.Clientset().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var done *corev1.Pod
	poll(t, 2*time.Minute, "the pod to succeed", func() (bool, string) {
		p, err := pj.Clientset().CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		done = p
		return p.Status.Phase == corev1.PodSucceeded, statusLine(p)
	})
	log := podLog(t, pj, "default", pod.Name)
	t.Logf("the pod's log:\n%s", log)
	facts := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		key, value, _ := strings.Cut(line, " ")
		facts[key] = value
	}
	if cg := facts["cgroup"]; !strings.Contains(cg, "/kubepods/besteffort/pod"+string(created.UID)+"/") {
		t.Errorf("the container's cgroup %q is not the kubelet's for pod %s", cg, created.UID)
	}
	if root := facts["root"]; !strings.HasPrefix(root, "overlay overlay ") || !strings.Contains(root, "upperdir="+filepath.Join(home, "nodes", localcluster.NodeName, "containerd")) {
		t.Errorf("the container's root %q is not containerd's overlay snapshot under the node's state", root)
	}
	if ip := facts["ip"]; ip != done.Status.PodIP || !strings.HasPrefix(ip, "10.244.0.") {
		t.Errorf("the pod sees IP %q, its status says %q; want one of 10.244.0.0/20", ip, done.Status.PodIP)
	}
	if dns := facts["dns"]; !strings.HasPrefix(dns, "10.96.0.1 ") {
		t.Errorf("kubernetes.default resolved to %q, want the kubernetes Service's 10.96.0.1", dns)
	}
	// The admission policy put the pod in a user namespace: its root is an
	// unprivileged uid of the host.
	if m := strings.Fields(facts["uidmap"]); len(m) != 3 || m[0] != "0" || m[1] == "0" || done.Spec.HostUsers == nil || *done.Spec.HostUsers {
		t.Errorf("the pod's uid map %q (hostUsers %v): its root is the host's", facts["uidmap"], ptr.Deref(done.Spec.HostUsers, true))
	}
	if facts["api"] != "reached" {
		t.Errorf("the API server's Service was not reached")
	}
}

// checkNothingLeft: after down no process of the node (containerd's shims
// name its socket under /run/paddlejob), no mount under the home, no cgroup
// of the node.
func checkNothingLeft(t *testing.T, home string) {
	if left := processesMentioning("/run/paddlejob/"); len(left) > 0 {
		t.Errorf("containerd processes left after down:\n%s", strings.Join(left, "\n"))
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, home) {
			t.Errorf("mount left after down: %s", line)
		}
	}
	for _, hierarchy := range []string{"memory", "pids", "unified", ""} {
		dir := filepath.Join("/sys/fs/cgroup", hierarchy, localcluster.RuntimeNodeCgroupRoot(home, localcluster.NodeName))
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("cgroup left after down: %s", dir)
		}
	}
	os.RemoveAll(home)
}

// checkRuntimeNodeYourProgram: paddlejob init's starter, in a directory no
// up flag allows (/var/tmp), runs with paddlejob run --build-context: its
// image is built from the context and imported into the node's containerd,
// its pods mount the context's data/ read-only and write its output/, and
// Paddle says who each trainer was. A second run, after the program
// changed, runs the new program: each run builds the image again.
func checkRuntimeNodeYourProgram(t *testing.T, pj *client.Client, st *localcluster.State, home string) {
	parent, err := os.MkdirTemp("/var/tmp", "paddlejob-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	dir := filepath.Join(parent, "my-ctr")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"KUBECONFIG=" + st.Kubeconfig(), "PADDLEJOB_HOME=" + home}
	if out, errOut, code := paddlejobCLI(t, env, "init", dir); code != 0 {
		t.Fatalf("paddlejob init: exit %d\n%s%s", code, out, errOut)
	}
	for run := 1; run <= 2; run++ {
		ns := newNamespace(t, pj)
		_, errOut, code := paddlejobCLI(t, env, "run", "-f", filepath.Join(dir, "job-ps.yaml"), "--build-context", dir, "-n", ns)
		if code != 0 || !strings.Contains(errOut, "image my-ctr:v1: the local node runs it from the build context "+dir+" (built from it now and imported into the nodes' containerd") ||
			!strings.Contains(errOut, "PaddleJob "+ns+"/my-ctr-ps completed") {
			dumpJob(t, pj, ns, "my-ctr-ps")
			t.Fatalf("run %d: paddlejob run: exit %d\n%s", run, code, errOut)
		}
		for rank := 0; rank < 2; rank++ {
			log := podLog(t, pj, ns, fmt.Sprintf("my-ctr-ps-worker-%d", rank))
			if !strings.Contains(log, fmt.Sprintf("role=TRAINER mode=ps rank=%d world_size=2 servers=2", rank)) {
				t.Errorf("run %d: trainer %d does not say who it was:\n%s", run, rank, log)
			}
			if edited := strings.Contains(log, "edited before run 2"); edited != (run == 2) {
				t.Errorf("run %d: trainer %d ran the program as edited before run 2: %v, want %v", run, rank, edited, run == 2)
			}
		}
		checkModel(t, filepath.Join(dir, "output", "ps"), podLog(t, pj, ns, "my-ctr-ps-worker-0"))
		// The program changes between the runs, as a user edits it, and
		// trains afresh (the starter resumes from output/'s checkpoints).
		if err := os.RemoveAll(filepath.Join(dir, "output", "ps")); err != nil {
			t.Fatal(err)
		}
		train := filepath.Join(dir, "train.py")
		src := mustReadAbs(t, train)
		// (At its end: its first statement is a __future__ import.)
		if err := os.WriteFile(train, []byte(src+"\n    print('edited before run 2', flush=True)\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
