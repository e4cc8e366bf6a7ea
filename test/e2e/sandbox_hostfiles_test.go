package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/pkg/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Two ways a pod might name the cluster's files on the host: a hostPath
// volume, and a symlink in the build context of a local image.

// probeStateHostPath: a hostPath volume that is the cluster's home, or the
// user's home holding it, is refused. The pod's container waits with the
// node's message naming the volume, the path and why, and an event says it.
func probeStateHostPath(t *testing.T, pj *client.Client, c *sandboxCluster) {
	ns := newNamespace(t, pj)
	ctx := context.Background()
	for _, tc := range []struct{ name, path, why string }{
		{"state", c.home, "is the cluster's state directory " + c.home + " or inside it"},
		{"home", c.userHome, "holds the cluster's state directory " + c.home + ":"},
	} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "reader", Image: "busybox:1.36", Command: []string{"ls", "-la", "/mnt"},
					VolumeMounts: []corev1.VolumeMount{{Name: "host-" + tc.name, MountPath: "/mnt"}},
				}},
				Volumes: []corev1.Volume{{Name: "host-" + tc.name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: tc.path}}}},
			},
		}
		if _, err := pj.Clientset().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		real, err := filepath.EvalSymlinks(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`hostPath volume "host-%s" (%s): refused: %s %s`, tc.name, tc.path, real, tc.why)
		poll(t, time.Minute, "pod "+tc.name+" waiting with the refusal", func() (bool, string) {
			p, err := pj.Clientset().CoreV1().Pods(ns).Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, s := range p.Status.ContainerStatuses {
				if w := s.State.Waiting; w != nil && strings.Contains(w.Message, want) {
					return true, w.Reason + ": " + w.Message
				}
			}
			return false, string(p.Status.Phase) + statusLine(p)
		})
		poll(t, time.Minute, "a FailedMount event of pod "+tc.name, func() (bool, string) {
			evs, err := pj.Clientset().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + tc.name})
			if err != nil {
				return false, err.Error()
			}
			var seen []string
			for _, e := range evs.Items {
				if e.Reason == "FailedMount" && strings.Contains(e.Message, tc.why) {
					return true, e.Message
				}
				seen = append(seen, e.Reason+": "+e.Message)
			}
			return false, strings.Join(seen, "; ")
		})
	}
}

// linksImage is the local image whose build context linksImageTable writes.
const linksImage = "example.com/sandbox-links:v1"

// linksImageTable writes, in dir, a build context whose symlinks lead to
// the cluster's home (absolute and relative), to a file in it from inside a
// directory, and to the user's home, copied whole into /usr/local/ by its
// Dockerfile (c.imageLinks); and an image table naming it linksImage. It
// returns the table's path.
func linksImageTable(t *testing.T, dir string, c *sandboxCluster) string {
	t.Helper()
	context := filepath.Join(dir, "context")
	if err := os.MkdirAll(filepath.Join(context, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	relState, err := filepath.Rel(context, c.home)
	if err != nil {
		t.Fatal(err)
	}
	c.imageLinks = map[string]string{
		"state":           c.home,
		"rel-state":       relState,
		"conf/kubeconfig": filepath.Join(c.home, "kubeconfig"),
		"home":            c.userHome,
	}
	for link, target := range c.imageLinks {
		if err := os.Symlink(target, filepath.Join(context, link)); err != nil {
			t.Fatal(err)
		}
	}
	table := filepath.Join(dir, "images.yaml")
	for path, content := range map[string]string{
		filepath.Join(context, "Dockerfile"): "FROM busybox\nCOPY . /usr/local/\n",
		filepath.Join(context, "data.txt"):   "image data\n",
		table:                                "images:\n  " + linksImage + ":\n    context: " + context + "\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return table
}

// linksProbe reports, for each link of the image, where it points, whether
// that exists in the pod (EXISTS or DANGLING), whether the file it would
// lead to on the host (the cluster's admin kubeconfig, the user's secret)
// could be read (READ or UNREADABLE), and whether a file could be written
// through it (WROTE or UNWRITABLE; the test looks for it on the host).
const linksProbe = `
report() {
  echo "LINK $1 -> $(readlink "/usr/local/$1")"
  if [ -e "/usr/local/$1" ]; then echo "EXISTS $1"; else echo "DANGLING $1"; fi
  if cat "/usr/local/$2" >/dev/null 2>&1; then echo "READ $1"; else echo "UNREADABLE $1"; fi
  [ -n "$3" ] || return 0
  if (echo planted > "/usr/local/$3/planted-by-pod") 2>/dev/null; then echo "WROTE $1"; else echo "UNWRITABLE $1"; fi
}
report state state/kubeconfig state
report rel-state rel-state/kubeconfig rel-state
report conf/kubeconfig conf/kubeconfig
report home "home/$SECRET" home
cat /usr/local/data.txt
`

// probeImageLinks: a local image's links arrive in the pod as links, as
// Docker copies them; resolved in the pod they lead to nothing of the host:
// the links to the cluster's home dangle, none reads the kubeconfig or the
// user's secret, and nothing the pod writes through them lands on the host.
func probeImageLinks(t *testing.T, pj *client.Client, c *sandboxCluster) {
	ns := newNamespace(t, pj)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "links", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "links", Image: linksImage, Command: []string{"sh", "-c", linksProbe},
				Env: []corev1.EnvVar{{Name: "SECRET", Value: filepath.Base(c.secret)}},
			}},
		},
	}
	done, log := runPodToEnd(t, pj, pod)
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the links pod ended %s%s", done.Status.Phase, statusLine(done))
	}
	lines := strings.Split(log, "\n")
	for link, target := range c.imageLinks {
		if !slices.Contains(lines, "LINK "+link+" -> "+target) {
			t.Errorf("the link %s did not arrive as a link to %s", link, target)
		}
		if !slices.Contains(lines, "UNREADABLE "+link) {
			t.Errorf("the pod read the host's file through the link %s", link)
		}
		if link != "home" && !slices.Contains(lines, "DANGLING "+link) {
			t.Errorf("the link %s to the cluster's home leads somewhere in the pod", link)
		}
	}
	if !slices.Contains(lines, "image data") {
		t.Error("the image's own file did not arrive")
	}
	for _, dir := range []string{c.home, c.userHome, filepath.Dir(c.home)} {
		if _, err := os.Lstat(filepath.Join(dir, "planted-by-pod")); !os.IsNotExist(err) {
			t.Errorf("the pod planted a file in %s (%v)", dir, err)
		}
	}
}

// probeFileOwner: a file a pod writes through a writable hostPath is, in
// the pod, its own uid's and gid's; on the host it is the same uid's and
// gid's on a root node, whose writable host paths are idmapped to its pods'
// host ids, and the node's user's on a normal user's node, whose user
// namespace maps the pod's uid to that user. The directory is given to
// whoever the pod's files are on the host, as a user gives a directory to a
// job's uid on Kubernetes.
func probeFileOwner(t *testing.T, pj *client.Client, c *sandboxCluster) {
	ns := newNamespace(t, pj)
	dir, err := os.MkdirTemp(c.writableDir, "owner-")
	if err != nil {
		t.Fatal(err)
	}
	ownerUID, ownerGID := fileOwner(c, int64(c.podUID)), c.nodeGID
	if c.rootNode {
		ownerGID = c.podGID
	}
	if err := os.Chown(dir, ownerUID, ownerGID); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "writer", Image: "busybox:1.36",
				Command:      []string{"sh", "-c", `echo written > /out/by-pod && echo "OWNER $(stat -c '%u %g' /out/by-pod)"`},
				VolumeMounts: []corev1.VolumeMount{{Name: "out", MountPath: "/out"}},
			}},
			Volumes: []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}},
		},
	}
	done, log := runPodToEnd(t, pj, pod)
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the writer pod ended %s%s", done.Status.Phase, statusLine(done))
	}
	if want := fmt.Sprintf("OWNER %d %d\n", c.podUID, c.podGID); log != want {
		t.Errorf("in the pod the file's owner is %q, want %q", log, want)
	}
	fi, err := os.Stat(filepath.Join(dir, "by-pod"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != ownerUID || int(st.Gid) != ownerGID {
		t.Errorf("on the host the file is %d:%d's, want %d:%d", st.Uid, st.Gid, ownerUID, ownerGID)
	}
}
