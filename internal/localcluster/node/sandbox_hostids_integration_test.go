//go:build integration

package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A root node's pods run as its range of host ids: the host sees a pod's
// processes as base+uid, never root or the node's user, runAsUser 0
// included. Its writable host paths are idmapped:
// what a pod of uid 1000 writes is 1000's on the host, a root pod creates
// nothing there, and pods of different uids share a 0777 directory. The
// kernel's settings are read-only to all of them. The staging mounts are
// gone once the pods started.
func TestRootNodePodsRunAsTheirHostIDs(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	ids := n.hostIDs
	if ids == nil {
		t.Fatal("a root node has no range of host ids for its pods")
	}
	node, err := n.client.CoreV1().Nodes().Get(context.Background(), n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Annotations[PodHostIDsAnnotation]; got != ids.Range.String() {
		t.Errorf("the Node's %s annotation is %q, want %q", PodHostIDsAnnotation, got, ids.Range.String())
	}

	shared := podsHostDir(t)
	rootOnly := t.TempDir() // root's 0755, as a directory root made for a job
	if err := os.Chmod(rootOnly, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `echo "UIDMAP $(cat /proc/self/uid_map)"
if (printf '%s\n' "$(cat /proc/sys/vm/swappiness)" > /proc/sys/vm/swappiness) 2>/dev/null; then echo "SYSCTL written"; else echo "SYSCTL refused"; fi
if (echo "$(id -u)" > /shared/by-$(id -u)) 2>/dev/null; then echo "HOSTPATH written"; else echo "HOSTPATH refused"; fi
if (echo "$(id -u)" > /root-only/by-$(id -u)) 2>/dev/null; then echo "ROOTDIR written"; else echo "ROOTDIR refused"; fi
if chmod 4755 /shared/by-$(id -u) 2>/dev/null; then echo "SETUID set"; else echo "SETUID refused"; fi
if chmod 2755 /shared/by-$(id -u) 2>/dev/null; then echo "SETGID set"; else echo "SETGID refused"; fi
echo READY
exec sleep 1000`
	tests := []struct {
		name string
		uid  int64
		// wantRootDir: the pod writes a root-owned 0755 directory, as
		// only root in the pod does (the disk's 0 is its 0).
		wantRootDir bool
	}{
		{"non-root", NonRootSandboxUID, false},
		{"other", 2000, false},
		{"root", 0, true},
	}
	for _, tc := range tests {
		pod := n.shellPod(ns, "ids-"+tc.name, script)
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(tc.uid), RunAsGroup: ptr.To(tc.uid)}
		pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PROBE_TOKEN", Value: ns + "-" + tc.name}}
		pod.Spec.Volumes = []corev1.Volume{
			{Name: "shared", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: shared}}},
			{Name: "root-only", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: rootOnly}}},
		}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}, {Name: "root-only", MountPath: "/root-only"}}
		n.create(t, pod)
		t.Cleanup(func() {
			_ = n.client.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkPodHostIDs(t, n, ns, tc.name, tc.uid, tc.wantRootDir, shared) })
	}
	t.Run("nothing staged is mounted once the pods run", func(t *testing.T) { checkNothingStaged(t, n, ns) })
}

// checkNothingStaged: no staging mount of the namespace's pods is left. Only
// those pods: the shared node stages the runs of the tests beside it
// meanwhile (a run's staging is named by its pod).
func checkNothingStaged(t *testing.T, n *testNode, ns string) {
	pods, err := n.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	dir := n.hostIDs.stager.dir + "/"
	for _, line := range strings.Split(string(mounts), "\n") {
		fields := strings.Fields(line)
		if len(fields) <= 4 || !strings.HasPrefix(fields[4], dir) {
			continue
		}
		for _, p := range pods.Items {
			if strings.HasPrefix(strings.TrimPrefix(fields[4], dir), string(p.UID)+"-") {
				t.Errorf("still mounted: %s (pod %s)", fields[4], p.Name)
			}
		}
	}
}

// checkPodHostIDs checks the probe pod ids-name of uid: its uid_map (for
// root), its sysctl and host path writes (a root-owned directory's as
// wantRootDir says), that no set-user-ID mode was given, its processes'
// host uids and the owner of the file it wrote.
func checkPodHostIDs(t *testing.T, n *testNode, ns, name string, uid int64, wantRootDir bool, shared string) {
	t.Helper()
	ids := n.hostIDs
	pod := "ids-" + name
	n.waitPhase(t, ns, pod, corev1.PodRunning)
	hostUID := ids.Range.Base + uint32(uid)
	var log string
	n.waitPod(t, ns, pod, 30*time.Second, "READY logged", func(*corev1.Pod) bool {
		log = n.logs(t, ns, pod, "main", "")
		return strings.Contains(log, "READY")
	})
	// bwrap maps a uid other than 0 through a user namespace of its
	// own, where the host user is 0 (it mounts /dev/pts there), so
	// only root's uid_map names the host uid; the host's view below
	// is what counts for every pod.
	if want := fmt.Sprintf("UIDMAP %d %d 1", uid, hostUID); uid == 0 && !strings.Contains(strings.Join(strings.Fields(log), " "), want) {
		t.Errorf("uid_map: the pod logged %q, want %q", log, want)
	}
	if !strings.Contains(log, "SYSCTL refused") {
		t.Error("the pod wrote vm.swappiness")
	}
	if !strings.Contains(log, "HOSTPATH written") {
		t.Errorf("the pod could not write the shared host path (log %q)", log)
	}
	if wrote := strings.Contains(log, "ROOTDIR written"); wrote != wantRootDir {
		t.Errorf("writing the root-owned 0755 host path: %v, want %v (log %q)", wrote, wantRootDir, log)
	}
	if !strings.Contains(log, "SETUID refused") || !strings.Contains(log, "SETGID refused") {
		t.Errorf("the pod gave a file a set-user-ID or set-group-ID mode (log %q)", log)
	}
	uids := hostUIDsOf(t, "PROBE_TOKEN="+ns+"-"+name)
	if len(uids) == 0 {
		t.Fatal("no process of the pod found on the host")
	}
	for _, u := range uids {
		if u != hostUID || u == 0 || u == uint32(os.Geteuid()) {
			t.Errorf("a process of the pod runs as host uid %d, want %d", u, hostUID)
		}
	}
	st, err := os.Stat(filepath.Join(shared, fmt.Sprintf("by-%d", uid)))
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); int64(sys.Uid) != uid || int64(sys.Gid) != uid {
		t.Errorf("the file the pod wrote is %d:%d on the host, want %d:%d", sys.Uid, sys.Gid, uid, uid)
	}
}

// hostUIDsOf returns the real, effective, saved and filesystem uids of every
// host process whose environment holds token.
func hostUIDsOf(t *testing.T, token string) []uint32 {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var uids []uint32
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
					u, _ := strconv.ParseUint(f, 10, 32)
					uids = append(uids, uint32(u))
				}
			}
		}
	}
	return uids
}
