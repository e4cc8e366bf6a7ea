//go:build integration

package node

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A build context's links arrive in the image as links, as Docker copies
// them: resolved inside the sandbox they lead nowhere, and the pod neither
// reads nor writes what they point to on the host (the node's keys here).
// Before, a link at the top of COPY . /usr/local/ was bound read-write.
func TestImageLinksArriveAsLinks(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pki := filepath.Join(n.stateDir, "state", "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pki, "ca.key"), []byte("the cluster's key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `for l in pki rel-pki conf/keys; do
  echo "$l -> $(readlink /usr/local/$l)"
  cat /usr/local/$l/ca.key 2>/dev/null && echo "$l: read the key"
  (echo planted > /usr/local/$l/planted) 2>/dev/null && echo "$l: wrote"
done
cat /usr/local/data.txt`
	pod := n.shellPod(ns, "links", script)
	pod.Spec.Containers[0].Image = "example.com/links:v1"
	n.create(t, pod)
	n.waitPhase(t, ns, "links", corev1.PodSucceeded)
	relPKI, _ := filepath.Rel(filepath.Join(n.stateDir, "contexts", "links"), pki)
	want := "pki -> " + pki + "\nrel-pki -> " + relPKI + "\nconf/keys -> " + pki + "\nimage data\n"
	if got := n.logs(t, ns, "links", "main", ""); got != want {
		t.Errorf("the pod logged %q, want %q", got, want)
	}
	// The node's own pki directory (it holds the kubelet's keys too): nothing
	// was planted in it and the key is as it was.
	if _, err := os.Lstat(filepath.Join(pki, "planted")); !os.IsNotExist(err) {
		t.Errorf("the pod planted a file in the state's pki directory (%v)", err)
	}
	if key, err := os.ReadFile(filepath.Join(pki, "ca.key")); err != nil || string(key) != "the cluster's key\n" {
		t.Errorf("ca.key now holds %q (%v)", key, err)
	}
}

// A hostPath that is the node's state directory, lies in it, holds it, or
// leads to it through a link is refused: the pod waits with the reason, and
// an event says it.
func TestHostPathToTheStateIsRefused(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	state := filepath.Join(n.stateDir, "state")
	linkDir := t.TempDir()
	if err := os.Symlink(state, filepath.Join(linkDir, "state")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, want string }{
		{"state", state, "is the cluster's state directory"},
		{"inside", filepath.Join(state, "pods"), "is the cluster's state directory"},
		{"holder", n.stateDir, "holds the cluster's state directory"},
		{"link", filepath.Join(linkDir, "state"), "is the cluster's state directory"},
	} {
		pod := n.shellPod(ns, tc.name, "cat /mnt/*")
		pod.Spec.Volumes = []corev1.Volume{{Name: "host-" + tc.name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: tc.path}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host-" + tc.name, MountPath: "/mnt"}}
		n.create(t, pod)
		wantMsg := `hostPath volume "host-` + tc.name + `" (` + tc.path + `)`
		n.waitPod(t, ns, tc.name, 30*time.Second, "waiting with the refusal", func(p *corev1.Pod) bool {
			for _, s := range p.Status.ContainerStatuses {
				if w := s.State.Waiting; w != nil && strings.Contains(w.Message, wantMsg) && strings.Contains(w.Message, tc.want) {
					return true
				}
			}
			return false
		})
		waitEvent(t, n, ns, tc.name, "FailedMount", tc.want)
	}
}

// A hostPath in no listed directory, of the kernel's views, or of a socket
// (in a listed directory) is refused: the pod waits with the reason naming
// the flag that allows it.
func TestHostPathsNotListedAreRefused(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	dir, err := os.MkdirTemp("/var/tmp", "paddlejob-node-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, "root.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for _, tc := range []struct{ name, path, want string }{
		{"etc", "/etc", "/etc is in no directory pods may mount: allow it (or a directory holding it) with paddlejob up --host-path-ro DIR"},
		{"proc", "/proc", "/proc is the host's /proc or inside it"},
		{"socket", filepath.Join(dir, "root.sock"), "is a Unix socket: pods may mount only regular files and directories"},
	} {
		pod := n.shellPod(ns, tc.name, "ls /mnt")
		pod.Spec.Volumes = []corev1.Volume{{Name: "host-" + tc.name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: tc.path}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "host-" + tc.name, MountPath: "/mnt"}}
		n.create(t, pod)
		waitEvent(t, n, ns, tc.name, "FailedMount", tc.want)
	}
}

// A hostPath outside the writable directories but in a listed one is
// mounted read-only.
func TestHostPathOutsideTheWritableDirectoriesIsReadOnly(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	// The shared node lets pods write below the temporary directory only.
	dir, err := os.MkdirTemp("/var/tmp", "paddlejob-node-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Writable by every uid: only the read-only mount keeps the pod out.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "input"), []byte("read me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := n.shellPod(ns, "ro", `cat /in/input; (echo x > /in/written) 2>/dev/null && echo wrote || echo "read-only"`)
	pod.Spec.Volumes = []corev1.Volume{{Name: "in", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "in", MountPath: "/in"}}
	n.create(t, pod)
	n.waitPhase(t, ns, "ro", corev1.PodSucceeded)
	if got := n.logs(t, ns, "ro", "main", ""); got != "read me\nread-only\n" {
		t.Errorf("the pod logged %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "written")); err == nil {
		t.Error("the pod wrote to a host path outside the writable directories")
	}
}

// waitEvent waits for an event of the pod with reason and a message
// holding text.
func waitEvent(t *testing.T, n *testNode, ns, pod, reason, text string) {
	t.Helper()
	var seen []string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := n.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, nil
		}
		seen = seen[:0]
		for _, e := range evs.Items {
			if e.Reason == reason && strings.Contains(e.Message, text) {
				return true, nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event of pod %s/%s saying %q; events: %q", reason, ns, pod, text, seen)
	}
}
