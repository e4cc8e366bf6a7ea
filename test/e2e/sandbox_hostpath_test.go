package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// A tenant's hostPath volumes (issue #34): what a pod may mount of the host
// is what the cluster's owner listed (up --host-path-ro, --host-path-rw),
// never the cluster's home, a kubeconfig, the kernel's views or a socket.
// Each attack is a tenant's pod or PaddleJob; the test, the cluster's admin,
// reads what it got.

// hostPathReader reads what its volume at /mnt shows: a socket it connects
// to, a directory it lists, a file it prints.
const hostPathReader = `if [ -S /mnt ]; then python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("/mnt"); print("CONNECTED")'
elif [ -d /mnt ]; then ls -A /mnt | head -20; cat /mnt/shadow /mnt/config 2>/dev/null
else cat /mnt; fi`

// probeTenantHostPaths: a namespace user's pods mount, read-only, the
// user's kubeconfig (holding the cluster's admin key) and its directory,
// the host's /etc/shadow, /etc, /, /proc, /sys and /dev, a root-only Unix
// socket in a writable directory, and the cluster's home. Each pod is
// refused before it runs, with the reason naming the volume, the path and
// why; none reads or connects to anything.
func probeTenantHostPaths(t *testing.T, pj *client.Client, c *sandboxCluster) {
	tenant, ns := namespaceUser(t, pj)
	sockDir, err := os.MkdirTemp(c.writableDir, "sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	// The node (a normal user's too) may look the socket up; only root may
	// connect to it.
	if err := os.Chmod(sockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(sockDir, "root.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.Chmod(socket, 0o600); err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Close()
			accepted <- struct{}{}
		}
	}()
	const notListed = "is in no directory pods may mount: allow it (or a directory holding it) with paddlejob up --host-path-ro DIR"
	for _, tc := range []struct{ name, path, why string }{
		{"kubeconfig", c.kubeconfig, "is or holds the kubeconfig " + c.kubeconfig},
		{"kubeconfig-dir", filepath.Dir(c.kubeconfig), "is or holds the kubeconfig " + c.kubeconfig},
		{"shadow", "/etc/shadow", notListed},
		{"etc", "/etc", notListed},
		{"root", "/", "holds the cluster's state directory"},
		{"proc", "/proc", "is the host's /proc or inside it"},
		{"sys", "/sys", "is the host's /sys or inside it"},
		{"dev", "/dev", "is the host's /dev or inside it"},
		{"socket", socket, "is a Unix socket: pods may mount only regular files and directories"},
		{"home", c.home, "is the cluster's state directory"},
	} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "reader", Image: "busybox:1.36", Command: []string{"sh", "-c", hostPathReader},
					VolumeMounts: []corev1.VolumeMount{{Name: "host-" + tc.name, MountPath: "/mnt", ReadOnly: true}},
				}},
				Volumes: []corev1.Volume{{Name: "host-" + tc.name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: tc.path}}}},
			},
		}
		if _, err := tenant.Clientset().CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the tenant's pod %s: %v", tc.name, err)
		}
		awaitHostPathRefused(t, pj, ns, tc.name, `hostPath volume "host-`+tc.name+`" (`+tc.path+`): refused: `, tc.why)
	}
	if n := len(accepted); n > 0 {
		t.Errorf("the root-only socket accepted %d connections from the tenant's pod", n)
	}
}

// awaitHostPathRefused waits for the pod's container to wait with the
// node's refusal (holding prefix and why) and a FailedMount event saying
// why. A pod that runs instead fails the test with what it got.
func awaitHostPathRefused(t *testing.T, pj *client.Client, ns, name, prefix, why string) {
	t.Helper()
	ctx := context.Background()
	poll(t, time.Minute, "pod "+name+" refused", func() (bool, string) {
		p, err := pj.Clientset().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			t.Fatalf("pod %s ran (%s) and got %s", name, p.Status.Phase, whatItRead(podLog(t, pj, ns, name)))
		}
		for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := s.State.Waiting; w != nil && strings.Contains(w.Message, prefix) && strings.Contains(w.Message, why) {
				return true, w.Reason + ": " + w.Message
			}
		}
		return false, string(p.Status.Phase) + statusLine(p)
	})
	awaitEvent(t, pj.Clientset(), ns, name, "FailedMount", why)
}

// whatItRead sums up an attacker's log without repeating the secrets it
// holds: its size and the marks of what it reached.
func whatItRead(log string) string {
	var marks []string
	for _, m := range []string{"client-key-data", "PRIVATE KEY", "root:", "CONNECTED"} {
		if strings.Contains(log, m) {
			marks = append(marks, m)
		}
	}
	return fmt.Sprintf("%d bytes of the host, holding %q", len(log), marks)
}

// awaitEvent waits for an event of the named object with reason and a
// message holding text.
func awaitEvent(t *testing.T, cs kubernetes.Interface, ns, name, reason, text string) {
	t.Helper()
	poll(t, time.Minute, "a "+reason+" event of "+name, func() (bool, string) {
		evs, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == reason && strings.Contains(e.Message, text) {
				return true, e.Message
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "; ")
	})
}

// probeFileOrCreateLink: a tenant's pod leaves a dangling link to the
// cluster's home in its writable hostPath; a second pod names the link as a
// FileOrCreate hostPath. The node refuses it and creates nothing where the
// link points.
func probeFileOrCreateLink(t *testing.T, pj *client.Client, c *sandboxCluster) {
	tenant, ns := namespaceUser(t, pj)
	ctx := context.Background()
	target := filepath.Join(c.home, "planted-by-"+ns)
	link := filepath.Join(c.writableDir, "link-"+ns)
	t.Cleanup(func() { os.Remove(link); os.Remove(target) })
	planter := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "planter", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "planter", Image: "busybox:1.36", Command: []string{"ln", "-s", target, "/out/" + filepath.Base(link)},
				VolumeMounts: []corev1.VolumeMount{{Name: "out", MountPath: "/out"}},
			}},
			Volumes: []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: c.writableDir}}}},
		},
	}
	if _, err := tenant.Clientset().CoreV1().Pods(ns).Create(ctx, planter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := awaitPodEnd(t, pj, ns, planter.Name); p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the planter pod %s: %s", p.Status.Phase, podLog(t, pj, ns, planter.Name))
	}
	if got, err := os.Readlink(link); err != nil || got != target {
		t.Fatalf("the planted link: %q, %v", got, err)
	}
	writer := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "writer", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo planted > /mnt/f && echo WROTE"},
				VolumeMounts: []corev1.VolumeMount{{Name: "f", MountPath: "/mnt/f"}},
			}},
			Volumes: []corev1.Volume{{Name: "f", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: link, Type: ptr.To(corev1.HostPathFileOrCreate)}}}},
		},
	}
	if _, err := tenant.Clientset().CoreV1().Pods(ns).Create(ctx, writer, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, pj.Clientset(), ns, writer.Name, "FailedMount", "")
	if fi, err := os.Lstat(target); err == nil {
		t.Errorf("the node created %s (%s) in the cluster's home through the tenant's link", target, fi.Mode())
	}
	awaitEvent(t, pj.Clientset(), ns, writer.Name, "FailedMount", "is or goes through a symbolic link")
}

// probePaddleJobHostPath: a user who may only create PaddleJobs asks for a
// worker that mounts the host's /etc and prints /etc/shadow. The operator
// makes the pod; the node refuses its volume, and the worker reads nothing.
func probePaddleJobHostPath(t *testing.T, pj *client.Client) {
	tenant, ns := paddleJobUser(t, pj)
	ctx := context.Background()
	tmpl := client.Container("paddle", "busybox:1.36", "cat", "/host/etc/shadow")
	tmpl.Spec.Volumes = []corev1.Volume{{Name: "etc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}}}
	tmpl.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "etc", MountPath: "/host/etc", ReadOnly: true}}
	job := client.NewJob("etc-reader", ns).Workers(1, tmpl).Obj()
	if _, err := tenant.Create(ctx, job); err != nil {
		t.Fatalf("the tenant's PaddleJob: %v", err)
	}
	var worker string
	poll(t, time.Minute, "the job's worker pod", func() (bool, string) {
		pods, err := pj.Pods(ctx, ns, job.Name)
		if err != nil || len(pods) == 0 {
			return false, "no pod yet"
		}
		worker = pods[0].Name
		return true, worker
	})
	awaitHostPathRefused(t, pj, ns, worker, `hostPath volume "etc" (/etc): refused: `,
		"/etc is in no directory pods may mount: allow it (or a directory holding it) with paddlejob up --host-path-ro DIR")
}

// probePodSecurity: a PaddleJob-only user, in a namespace at the cluster's
// default PodSecurity level (baseline), asks for workers on the host's
// network (intranet: Host), privileged, mounting /etc. The operator's
// webhook, which dry-runs the job's pods, refuses the PaddleJob with the
// level and the fields PodSecurity named; no job and no pod exist.
func probePodSecurity(t *testing.T, pj *client.Client) {
	ns := createNamespace(t, pj, nil)
	tenant := tenantIn(t, pj, ns, "e2e-paddlejob-user", paddleJobUserRules)
	ctx := context.Background()
	tmpl := client.Container("paddle", "busybox:1.36", "cat", "/host/etc/shadow")
	tmpl.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true), RunAsUser: ptr.To[int64](0)}
	tmpl.Spec.Volumes = []corev1.Volume{{Name: "etc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}}}
	tmpl.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "etc", MountPath: "/host/etc", ReadOnly: true}}
	job := client.NewJob("host-root", ns).Workers(1, tmpl).Intranet(paddlev1.IntranetHost).Obj()
	_, err := tenant.Create(ctx, job)
	if err == nil {
		pods, _ := pj.Pods(ctx, ns, job.Name)
		t.Fatalf("the PaddleJob was admitted in a namespace at the default level; the operator made %d pods of it", len(pods))
	}
	t.Logf("refused: %v", err)
	for _, w := range []string{`violates PodSecurity "baseline:latest"`, "hostNetwork=true", `hostPath volumes (volume "etc")`, "privileged"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the refusal does not say %q", w)
		}
	}
	if _, err := pj.Get(ctx, ns, job.Name); !apierrors.IsNotFound(err) {
		t.Errorf("the refused PaddleJob: %v, want not found", err)
	}
	pods, err := pj.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		t.Errorf("pod %s exists (%s): PodSecurity let it through", p.Name, p.Status.Phase)
	}
}

// kubeconfigAt is the kubeconfig access of a user whose kubeconfig is file,
// as $KUBECONFIG=file gives it.
func kubeconfigAt(file string) *clientcmd.PathOptions {
	access := clientcmd.NewDefaultPathOptions()
	access.EnvVar = ""
	access.GlobalFile = file
	access.LoadingRules.Precedence = []string{file}
	access.LoadingRules.ExplicitPath = ""
	return access
}
