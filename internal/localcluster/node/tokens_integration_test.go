//go:build integration

package node

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A pod gets a token of its service account bound to it, and the API
// server's address, as a kubelet gives them: rest.InClusterConfig works.
func TestServiceAccountTokenAndAPIServerAddress(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	ctx := context.Background()
	if _, err := n.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "trainer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const dir = "/var/run/secrets/kubernetes.io/serviceaccount"
	pod := n.shellPod(ns, "token", `echo "api=$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; wc -c < `+dir+`/token`)
	pod.Spec.ServiceAccountName = "trainer"
	pod.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}}},
	}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access", MountPath: dir, ReadOnly: true}}
	n.create(t, pod)
	n.waitPhase(t, ns, "token", corev1.PodSucceeded)
	log := n.logs(t, ns, "token", "main", "")
	host := strings.TrimSuffix(strings.TrimPrefix(n.Node.cfg.RESTConfig.Host, "https://"), "/")
	if !strings.Contains(log, "api="+host) {
		t.Errorf("log %q does not give the API server %s", log, host)
	}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) != 2 || strings.TrimSpace(lines[1]) == "0" {
		t.Errorf("no token: %q", log)
	}
}
