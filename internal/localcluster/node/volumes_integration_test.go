//go:build integration

package node

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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestVolumes(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	createVolumeSources(t, n, ns)
	hostDir := podsHostDir(t)
	if err := os.WriteFile(filepath.Join(hostDir, "in-host-dir"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := volumesPod(n, ns, hostDir)
	created := n.create(t, pod)
	got := n.waitPod(t, ns, "volumes", 30*time.Second, "completion", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	log := n.logs(t, ns, "volumes", "main", "")
	want := strings.Join([]string{
		"from-writer", "from-peer", "from the host", "a.txt: root's", "600", "alpha", "pw", `role="worker"`,
		"betapwvolumes", "from the PV", "alpha", "",
	}, "\n")
	if got.Status.Phase != corev1.PodSucceeded || log != want {
		t.Fatalf("%s\nlog:\n%s\nwant:\n%s", describeStatus(got), log, want)
	}
	if b, err := os.ReadFile(filepath.Join(hostDir, "from-pod")); err != nil || string(b) != "written-by-pod\n" {
		t.Errorf("hostPath file written by the pod: %q, %v", b, err)
	}
	subFile := filepath.Join(n.podDir(created), "volumes", "shared", "sub", "dir", "file")
	if b, err := os.ReadFile(subFile); err != nil || string(b) != "subpath\n" {
		t.Errorf("subPath file: %q, %v", b, err)
	}
}

// createVolumeSources creates what volumesPod's volumes come from: the
// default service account, ConfigMap conf, Secret sec, and claim, bound to
// a hostPath PersistentVolume holding dataset.
func createVolumeSources(t *testing.T, n *testNode, ns string) {
	t.Helper()
	ctx := context.Background()
	var err error
	// No controller manager runs here to create the service account a token is issued for.
	if _, err := n.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvDir := podsHostDir(t)
	if err := os.WriteFile(filepath.Join(pvDir, "dataset"), []byte("from the PV\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = n.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "conf"}, Data: map[string]string{"a.txt": "alpha", "b.txt": "beta"},
	}, metav1.CreateOptions{})
	noErr(t, err)
	_, err = n.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sec"}, Data: map[string][]byte{"password": []byte("pw")},
	}, metav1.CreateOptions{})
	noErr(t, err)
	pvName := ns + "-pv"
	_, err = n.client.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: pvDir}},
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: "claim"},
		},
	}, metav1.CreateOptions{})
	noErr(t, err)
	pvc, err := n.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeName:  pvName,
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	noErr(t, err)
	// No controller-manager binds it here: mark it bound as the binder would.
	pvc.Status.Phase = corev1.ClaimBound
	_, err = n.client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	noErr(t, err)
}

// volumesPod mounts a volume of every kind the node supports, subPaths and
// read-only mounts included, and prints what it reads from each; an init
// container and a second container share an emptyDir with it.
func volumesPod(n *testNode, ns, hostDir string) *corev1.Pod {
	script := strings.Join([]string{
		"set -e",
		"cat /shared/from-writer",
		"until [ -e /shared/from-peer ]; do sleep 0.05; done; cat /shared/from-peer",
		"cat /host/in-host-dir",
		"echo written-by-pod > /host/from-pod",
		// A 0600 item is root's, as the kubelet writes it: out of reach of
		// a pod of uid 1000.
		`if cat /cfg/a.txt 2>/dev/null; then echo; else echo "a.txt: root's"; fi`,
		"test ! -e /cfg/b.txt",
		"stat -L -c %a /cfg/a.txt",
		"cat /etc/paddle/alpha; echo",
		"cat /secret/password; echo",
		"cat /downward/labels; echo",
		"cat /projected/conf/b.txt /projected/password /projected/name; echo",
		"cat /data/dataset",
		"cat /single-key; echo",
		"if touch /cfg/new 2>/dev/null; then echo cfg-writable; fi",
		"if touch /ro-host/x 2>/dev/null; then echo ro-writable; fi",
		"echo subpath > /shared-sub/file",
	}, "\n")
	pod := n.shellPod(ns, "volumes", script)
	pod.Labels = map[string]string{"role": "worker"}
	pod.Spec.ServiceAccountName = "default" // for the token projection
	// Not root in the pod (a root node's default), so that the 0600 item
	// is out of its reach.
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](NonRootSandboxUID), RunAsGroup: ptr.To[int64](NonRootSandboxGID)}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir, Type: ptr.To(corev1.HostPathDirectory)}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "conf"},
			Items:                []corev1.KeyToPath{{Key: "a.txt", Path: "a.txt", Mode: ptr.To[int32](0o600)}},
		}}},
		{Name: "cfg-all", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "conf"},
			Items:                []corev1.KeyToPath{{Key: "a.txt", Path: "alpha"}},
		}}},
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}},
		{Name: "downward", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
		}}},
		{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, Items: []corev1.KeyToPath{{Key: "b.txt", Path: "conf/b.txt"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
		}}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}},
	}
	writer := shellContainer("writer", "echo from-writer > /shared/from-writer")
	writer.VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	pod.Spec.InitContainers = []corev1.Container{writer}
	peer := shellContainer("peer", "echo from-peer > /shared/from-peer.tmp; mv /shared/from-peer.tmp /shared/from-peer")
	peer.VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "shared", MountPath: "/shared"},
		{Name: "shared", MountPath: "/shared-sub", SubPath: "sub/dir"},
		{Name: "host", MountPath: "/host"},
		{Name: "host", MountPath: "/ro-host", ReadOnly: true},
		{Name: "cfg", MountPath: "/cfg"},
		{Name: "cfg-all", MountPath: "/etc/paddle"},
		{Name: "cfg-all", MountPath: "/single-key", SubPath: "alpha"},
		{Name: "secret", MountPath: "/secret"},
		{Name: "downward", MountPath: "/downward"},
		{Name: "projected", MountPath: "/projected"},
		{Name: "data", MountPath: "/data"},
	}
	pod.Spec.Containers = append(pod.Spec.Containers, peer)
	return pod
}

// TestProjectedVolumeFollowsAnnotationsAndConfigMaps plays the operator's
// wait-for-endpoints init container: it waits until a file projected from a
// pod annotation equals a key of an optional ConfigMap projected into the
// same volume, both set after the pod started.
func TestProjectedVolumeFollowsAnnotationsAndConfigMaps(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	ctx := context.Background()
	var err error
	pod := n.shellPod(ns, "waiter", "cat /etc/endpoints/version /etc/endpoints/pod-version")
	pod.Spec.Volumes = []corev1.Volume{{Name: "endpoints", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "job-endpoints"}, Optional: ptr.To(true)}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "pod-version", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['example.com/endpoints']"},
			}}}},
		},
	}}}}
	wait := shellContainer("wait", `while :; do
  want=$(cat /etc/endpoints/pod-version 2>/dev/null); have=$(cat /etc/endpoints/version 2>/dev/null)
  if [ -n "$want" ] && [ "$want" = "$have" ]; then exit 0; fi
  sleep 0.1
done`)
	mountEndpoints := []corev1.VolumeMount{{Name: "endpoints", MountPath: "/etc/endpoints", ReadOnly: true}}
	wait.VolumeMounts = mountEndpoints
	pod.Spec.InitContainers = []corev1.Container{wait}
	pod.Spec.Containers[0].VolumeMounts = mountEndpoints
	n.create(t, pod)
	n.waitPod(t, ns, "waiter", 10*time.Second, "init container running", func(p *corev1.Pod) bool {
		return len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].State.Running != nil
	})

	_, err = n.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "job-endpoints"}, Data: map[string]string{"version": "7"},
	}, metav1.CreateOptions{})
	noErr(t, err)
	patch := []byte(`{"metadata":{"annotations":{"example.com/endpoints":"7"}}}`)
	patched := time.Now()
	if _, err := n.client.CoreV1().Pods(ns).Patch(ctx, "waiter", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The node reacts to the pod's update (it has no periodic resync): the
	// bound only ends the wait for a node that never does.
	n.waitPod(t, ns, "waiter", 30*time.Second, "Succeeded after the annotation", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded
	})
	t.Logf("init container passed %s after the annotation was set", time.Since(patched).Round(time.Millisecond))
	if log := n.logs(t, ns, "waiter", "main", ""); log != "77" {
		t.Errorf("log = %q, want the ConfigMap's and the annotation's version", log)
	}
}

func TestProjectedFileChangesWhileRunning(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	ctx := context.Background()
	pod := n.shellPod(ns, "watcher", `last=""
while :; do
  v=$(cat /info/note 2>/dev/null)
  if [ "$v" != "$last" ]; then echo "note=$v"; last=$v; fi
  sleep 0.05
done`)
	pod.Annotations = map[string]string{"note": "one"}
	pod.Spec.Volumes = []corev1.Volume{{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: "note", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['note']"}}},
	}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "info", MountPath: "/info"}}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	n.create(t, pod)
	n.waitPhase(t, ns, "watcher", corev1.PodRunning)
	waitForLog(t, n, ns, "watcher", "note=one\n", 30*time.Second)
	patch := []byte(`{"metadata":{"annotations":{"note":"two"}}}`)
	if _, err := n.client.CoreV1().Pods(ns).Patch(ctx, "watcher", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForLog(t, n, ns, "watcher", "note=one\nnote=two\n", 30*time.Second)
}

// waitForLog waits until a container's log is want.
func waitForLog(t *testing.T, n *testNode, ns, pod, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var got string
	for time.Now().Before(deadline) {
		if got = n.logs(t, ns, pod, "main", ""); got == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("log of %s = %q after %s, want %q", pod, got, timeout, want)
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// podDir is where the node keeps a pod's files.
func (n *testNode) podDir(pod *corev1.Pod) string {
	return filepath.Join(n.stateDir, "state", "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}
