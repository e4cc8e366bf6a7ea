package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// Attacks on the host's kernel and identity from a tenant's pods (issue
// #34): a pod must not change the kernel's settings, see the host's
// processes, or be the host's root. Each runs as a pod of namespaceUser and,
// where the operator makes the pod, a PaddleJob of paddleJobUser; the test
// (the cluster's admin, on the host) reads what the attack got.

// kernelProbe tries to write the kernel's settings back with the values
// they hold (never a new one), to open /proc/sysrq-trigger for writing
// without writing, and reports its PID namespace and the processes it sees.
const kernelProbe = `
writeback() {
  if v=$(cat "$1" 2>/dev/null) && (printf '%s\n' "$v" > "$1") 2>/dev/null; then echo "WRITABLE $1"; else echo "REFUSED $1"; fi
}
writeback /proc/sys/kernel/core_pattern
writeback /proc/sys/vm/swappiness
if (exec 3>>/proc/sysrq-trigger) 2>/dev/null; then echo "WRITABLE /proc/sysrq-trigger"; else echo "REFUSED /proc/sysrq-trigger"; fi
echo "PIDNS $(readlink /proc/self/ns/pid)"
echo "PROCESSES $(ls /proc | grep -c '^[0-9][0-9]*$')"
`

// kernelAttacks are the knobs kernelProbe must report refused.
var kernelAttacks = []string{"/proc/sys/kernel/core_pattern", "/proc/sys/vm/swappiness", "/proc/sysrq-trigger"}

// probeKernelKnobs runs kernelProbe as a tenant's pods, one as the node's
// default user and one as root in the pod, and as a tenant's PaddleJob.
func probeKernelKnobs(t *testing.T, pj *client.Client) {
	for name, sc := range map[string]*corev1.PodSecurityContext{
		"default user": nil, "runAsUser 0": {RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0)},
	} {
		t.Run("a namespace user's pod as "+name, func(t *testing.T) {
			tc, ns := namespaceUser(t, pj)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "knobs", Namespace: ns},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, SecurityContext: sc,
					Containers: []corev1.Container{{Name: "probe", Image: "busybox:1.36", Command: []string{"sh", "-c", kernelProbe}}},
				},
			}
			createAsTenant(t, func() error {
				_, err := tc.Clientset().CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
				return err
			})
			checkKernelProbe(t, pj, ns, pod.Name)
		})
	}
	t.Run("a PaddleJob user's job", func(t *testing.T) {
		tc, ns := paddleJobUser(t, pj)
		job := testutil.MakePaddleJob("knobs", ns).Workers(1).Image("busybox:1.36").
			CleanPodPolicy(paddlev1.CleanPodPolicyNever).Command(paddlev1.ReplicaWorker, "sh", "-c", kernelProbe).Obj()
		createAsTenant(t, func() error {
			_, err := tc.Create(context.Background(), job)
			return err
		})
		t.Cleanup(func() { _ = pj.Delete(context.Background(), ns, job.Name) })
		checkKernelProbe(t, pj, ns, job.Name+"-worker-0")
	})
}

// checkKernelProbe waits for the probe pod to end and checks that every
// write was refused and that the pod has a PID namespace of its own,
// holding its own few processes.
func checkKernelProbe(t *testing.T, pj *client.Client, ns, name string) {
	t.Helper()
	if done := awaitPodEnd(t, pj, ns, name); done.Status.Phase != corev1.PodSucceeded {
		t.Errorf("the probe pod ended %s", done.Status.Phase)
	}
	log := podLog(t, pj, ns, name)
	t.Logf("%s:\n%s", name, log)
	for _, knob := range kernelAttacks {
		if !strings.Contains(log, "REFUSED "+knob+"\n") {
			t.Errorf("the pod was not refused writing %s", knob)
		}
	}
	hostNS, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log, "PIDNS pid:[") || strings.Contains(log, "PIDNS "+hostNS+"\n") {
		t.Errorf("the pod is not in a PID namespace of its own (the host's is %s)", hostNS)
	}
	// The pod's shell, its ls and grep, and the sandbox's init: a handful,
	// where the host has hundreds.
	for _, line := range strings.Split(log, "\n") {
		if n, ok := strings.CutPrefix(line, "PROCESSES "); ok {
			if count, err := strconv.Atoi(n); err != nil || count > 8 {
				t.Errorf("the pod sees %s processes: more than its own", n)
			}
			return
		}
	}
	t.Error("the pod did not report the processes it sees")
}

// hostIDProbe reports READY and stays, so that the test finds its
// processes on the host by the token in their environment.
const hostIDProbe = `echo "UIDMAP $(cat /proc/self/uid_map)"; echo READY; exec sleep 600`

// podHostUID is who a pod of uid u is on the host: on a root node, u past
// the base its Node names (node.PodHostIDsAnnotation); on a normal user's,
// the user.
func podHostUID(t *testing.T, pj *client.Client, c *sandboxCluster, u int64) int {
	t.Helper()
	if !c.rootNode {
		return c.nodeUID
	}
	nodes, err := pj.Clientset().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if r, ok := n.Annotations[node.PodHostIDsAnnotation]; ok {
			base, err := strconv.Atoi(r[:strings.Index(r, "-")])
			if err != nil {
				t.Fatalf("node %s: %s %q: %v", n.Name, node.PodHostIDsAnnotation, r, err)
			}
			return base + int(u)
		}
	}
	t.Fatalf("no node names the pods' host ids (%s)", node.PodHostIDsAnnotation)
	return 0
}

// probeHostUID: seen from the host, a tenant's pod, its root-in-pod pod and
// a PaddleJob's pod run as neither root nor the node's user on a root node
// (as the user on a normal user's, which has no other ids to give).
func probeHostUID(t *testing.T, pj *client.Client, c *sandboxCluster) {
	for name, uid := range map[string]int64{"default user": int64(c.podUID), "runAsUser 0": 0} {
		t.Run("a namespace user's pod as "+name, func(t *testing.T) {
			tc, ns := namespaceUser(t, pj)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "ids", Namespace: ns},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{Name: "probe", Image: "busybox:1.36", Command: []string{"sh", "-c", hostIDProbe},
						Env: []corev1.EnvVar{{Name: "PROBE_TOKEN", Value: ns}}}},
				},
			}
			if uid == 0 {
				pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0)}
			}
			createAsTenant(t, func() error {
				_, err := tc.Clientset().CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
				return err
			})
			checkHostUID(t, pj, c, ns, pod.Name, uid)
		})
	}
	t.Run("a PaddleJob user's job", func(t *testing.T) {
		tc, ns := paddleJobUser(t, pj)
		job := testutil.MakePaddleJob("ids", ns).Workers(1).Image("busybox:1.36").
			Env(paddlev1.ReplicaWorker, "PROBE_TOKEN", ns).Command(paddlev1.ReplicaWorker, "sh", "-c", hostIDProbe).Obj()
		createAsTenant(t, func() error {
			_, err := tc.Create(context.Background(), job)
			return err
		})
		t.Cleanup(func() { _ = pj.Delete(context.Background(), ns, job.Name) })
		checkHostUID(t, pj, c, ns, job.Name+"-worker-0", int64(c.podUID))
	})
}

// checkHostUID waits for the probe pod to say READY and checks the host
// uids of its processes, which hold PROBE_TOKEN=ns.
func checkHostUID(t *testing.T, pj *client.Client, c *sandboxCluster, ns, name string, uid int64) {
	t.Helper()
	poll(t, 2*time.Minute, name+" is READY", func() (bool, string) {
		r, err := pj.Logs(context.Background(), ns, name, client.LogOptions{})
		if err != nil {
			return false, err.Error()
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		return strings.Contains(string(b), "READY"), string(b)
	})
	t.Logf("%s: %s", name, podLog(t, pj, ns, name))
	uids := hostUIDsOf(t, "PROBE_TOKEN="+ns)
	if len(uids) == 0 {
		t.Fatal("no process of the pod found on the host")
	}
	t.Logf("host uids of the pod's processes: %v", uids)
	for _, u := range uids {
		if c.rootNode && (u == 0 || u == c.nodeUID) {
			t.Fatalf("a process of the pod is host uid %d: the host's root or the node's user", u)
		}
	}
	want := podHostUID(t, pj, c, uid)
	for _, u := range uids {
		if u != want {
			t.Errorf("a process of the pod is host uid %d, want %d", u, want)
		}
	}
	_ = pj.Clientset().CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}

// hostUIDsOf returns the real, effective, saved and filesystem uids of every
// host process whose environment holds token.
func hostUIDsOf(t *testing.T, token string) []int {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var uids []int
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
		if err != nil || !bytes.Contains(append(env, 0), []byte(token+"\x00")) {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", p.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if fields := strings.Fields(line); len(fields) == 5 && fields[0] == "Uid:" {
				for _, f := range fields[1:] {
					u, _ := strconv.Atoi(f)
					uids = append(uids, u)
				}
			}
		}
	}
	return uids
}

// sharedWriter writes its uid's file in /shared and reads the files the
// pods before it wrote there.
const sharedWriter = `set -e
echo "$(id -u)" > /shared/by-$(id -u)-$WRITER
for f in /shared/*; do echo "READ $f $(cat $f)"; done`

// probeSharedHostPath: a writable hostPath directory (0777, as a user gives
// pods of several uids a directory) is shared by pods of different uids and
// by pods of different PaddleJobs, as Gloo's file store and checkpoints
// are; what each writes is its uid's on the host (the node's user's on a
// normal user's node).
func probeSharedHostPath(t *testing.T, pj *client.Client, c *sandboxCluster) {
	dir, err := os.MkdirTemp(c.writableDir, "shared-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	volume := corev1.Volume{Name: "shared", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}
	mountShared := []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	writers := []struct {
		name string
		uid  int64
	}{{"a", int64(c.podUID)}, {"b", int64(c.podUID) + 1000}}

	tc, ns := namespaceUser(t, pj)
	for _, w := range writers {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "writer-" + w.name, Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy:   corev1.RestartPolicyNever,
				SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To(w.uid), RunAsGroup: ptr.To(w.uid)},
				Containers: []corev1.Container{{Name: "writer", Image: "busybox:1.36", Command: []string{"sh", "-c", sharedWriter},
					Env: []corev1.EnvVar{{Name: "WRITER", Value: "pod-" + w.name}}, VolumeMounts: mountShared}},
				Volumes: []corev1.Volume{volume},
			},
		}
		createAsTenant(t, func() error {
			_, err := tc.Clientset().CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
			return err
		})
		if done := awaitPodEnd(t, pj, ns, pod.Name); done.Status.Phase != corev1.PodSucceeded {
			t.Errorf("writer %s ended %s: %s", w.name, done.Status.Phase, podLog(t, pj, ns, pod.Name))
		}
	}
	jc, jns := paddleJobUser(t, pj)
	for _, w := range writers {
		job := testutil.MakePaddleJob("writer-"+w.name, jns).Workers(1).Image("busybox:1.36").CleanPodPolicy(paddlev1.CleanPodPolicyNever).
			Env(paddlev1.ReplicaWorker, "WRITER", "job-"+w.name).Command(paddlev1.ReplicaWorker, "sh", "-c", sharedWriter).Obj()
		spec := &job.Spec.Replicas(paddlev1.ReplicaWorker).Template.Spec
		spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(w.uid), RunAsGroup: ptr.To(w.uid)}
		spec.Volumes = []corev1.Volume{volume}
		spec.Containers[0].VolumeMounts = mountShared
		createAsTenant(t, func() error {
			_, err := jc.Create(context.Background(), job)
			return err
		})
		t.Cleanup(func() { _ = pj.Delete(context.Background(), jns, job.Name) })
		if done := awaitPodEnd(t, pj, jns, job.Name+"-worker-0"); done.Status.Phase != corev1.PodSucceeded {
			t.Errorf("job %s's worker ended %s: %s", w.name, done.Status.Phase, podLog(t, pj, jns, job.Name+"-worker-0"))
		}
	}
	if log := podLog(t, pj, jns, "writer-b-worker-0"); !strings.Contains(log, "READ /shared/by-") || strings.Count(log, "READ ") != 4 {
		t.Errorf("the last writer did not read the three files before its own:\n%s", log)
	}
	for _, w := range writers {
		for _, who := range []string{"pod-", "job-"} {
			checkOwnedBy(t, dir, who+w.name, fileOwner(c, w.uid))
		}
	}
}

// fileOwner is who a file a pod of uid u writes to a writable hostPath is
// on the host (docs/local-node.md#host-paths): u on a root node (its
// writable host paths are idmapped), the user on a normal user's node.
func fileOwner(c *sandboxCluster, u int64) int {
	if c.rootNode {
		return int(u)
	}
	return c.nodeUID
}

// checkOwnedBy checks the owner of the one file in dir whose name ends in
// suffix.
func checkOwnedBy(t *testing.T, dir, suffix string, uid int) {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, "by-*-"+suffix))
	if len(matches) != 1 {
		t.Errorf("files of writer %s: %v", suffix, matches)
		return
	}
	fi, err := os.Stat(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid {
		t.Errorf("%s is host uid %d's, want %d's", matches[0], st.Uid, uid)
	}
}

// createAsTenant creates an object as a tenant, whose RoleBinding was just
// made: the API server's authorizer learns it from its informer, so the
// first requests may be forbidden for a moment.
func createAsTenant(t *testing.T, create func() error) {
	t.Helper()
	poll(t, time.Minute, "the tenant's create is allowed", func() (bool, string) {
		err := create()
		if apierrors.IsForbidden(err) {
			return false, err.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		return true, "created"
	})
}

// setIDProbe copies a program into /out and tries to make it set-user-ID
// and set-group-ID, as a pod would leave the host a program that runs as
// the file's owner.
const setIDProbe = `set -e
cp "$(command -v sh)" /out/tool
if chmod 4755 /out/tool 2>/dev/null; then echo "SETUID set"; else echo "SETUID refused"; fi
if chmod 2755 /out/tool 2>/dev/null; then echo "SETGID set"; else echo "SETGID refused"; fi
echo "MODE $(stat -c %a /out/tool)"`

// probeSetID: a tenant's pod, root in the pod by default on a root node,
// writes a root-owned 0755 directory of a writable hostPath as a
// container's root does (what it makes there is root's on the host, as
// with Kubernetes' idmapped volumes), but can give nothing there a
// set-user-ID or set-group-ID mode: such a file would run as the host's
// root for whoever starts it. On a normal user's node the directory is
// the user's and so is the file.
func probeSetID(t *testing.T, pj *client.Client, c *sandboxCluster) {
	dir, err := os.MkdirTemp(c.writableDir, "setid-")
	if err != nil {
		t.Fatal(err)
	}
	owner := fileOwner(c, int64(c.podUID))
	if err := os.Chown(dir, owner, owner); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tc, ns := namespaceUser(t, pj)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "setid", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "probe", Image: "busybox:1.36", Command: []string{"sh", "-c", setIDProbe},
				VolumeMounts: []corev1.VolumeMount{{Name: "out", MountPath: "/out"}}}},
			Volumes: []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}},
		},
	}
	createAsTenant(t, func() error {
		_, err := tc.Clientset().CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
		return err
	})
	done := awaitPodEnd(t, pj, ns, pod.Name)
	log := podLog(t, pj, ns, pod.Name)
	t.Logf("the pod ended %s:\n%s", done.Status.Phase, log)
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the pod could not write the directory its owner's uid owns")
	}
	if !strings.Contains(log, "SETUID refused") || !strings.Contains(log, "SETGID refused") {
		t.Errorf("the pod gave its file a set-user-ID or set-group-ID mode")
	}
	fi, err := os.Stat(filepath.Join(dir, "tool"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Errorf("on the host the pod's file is %v", fi.Mode())
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != owner {
		t.Errorf("on the host the pod's file is uid %d's, want %d's", st.Uid, owner)
	}
}
