//go:build integration

package node

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestEnvironment(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	ctx := context.Background()
	if _, err := n.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data:       map[string]string{"mode": "fast", "level": "3"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		Data:       map[string][]byte{"token": []byte("s3cret")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	pod := n.shellPod(ns, "env", "env | sort")
	pod.Labels = map[string]string{"app": "trainer"}
	pod.Annotations = map[string]string{"note": "hello"}
	c := &pod.Spec.Containers[0]
	c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
	c.EnvFrom = []corev1.EnvFromSource{
		{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
	}
	c.Env = []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: field("metadata.name")},
		{Name: "POD_NAMESPACE", ValueFrom: field("metadata.namespace")},
		{Name: "POD_UID", ValueFrom: field("metadata.uid")},
		{Name: "APP", ValueFrom: field("metadata.labels['app']")},
		{Name: "NOTE", ValueFrom: field("metadata.annotations['note']")},
		{Name: "NODE", ValueFrom: field("spec.nodeName")},
		{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
		{Name: "POD_IP", ValueFrom: field("status.podIP")},
		{Name: "POD_IPS", ValueFrom: field("status.podIPs")},
		{Name: "HOST_IP", ValueFrom: field("status.hostIP")},
		{Name: "MEM_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "mode"}}},
		{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}},
		{Name: "OPTIONAL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "nope", Optional: ptr.To(true)}}},
		{Name: "COMPOSED", Value: "$(APP)-$(MODE)-$$(APP)-$(UNDEFINED)"},
	}
	n.create(t, pod)
	got := n.waitPhase(t, ns, "env", corev1.PodSucceeded)
	log := n.logs(t, ns, "env", "main", "")
	env := map[string]string{}
	for _, line := range strings.Split(log, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	want := map[string]string{
		"POD_NAME": "env", "POD_NAMESPACE": ns, "POD_UID": string(got.UID),
		"APP": "trainer", "NOTE": "hello", "NODE": n.name, "SA": "",
		"POD_IP": got.Status.PodIP, "POD_IPS": got.Status.PodIP, "HOST_IP": DefaultNodeIP,
		"MEM_MI": "64", "MODE": "fast", "TOKEN": "s3cret", "CM_mode": "fast", "CM_level": "3",
		"COMPOSED": "trainer-fast-$(APP)-$(UNDEFINED)", "HOSTNAME": "env",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["OPTIONAL"]; ok {
		t.Error("OPTIONAL is set, want it left out since its key is missing")
	}
}

func TestMissingConfigMapKeepsContainerWaitingUntilCreated(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	pod := n.shellPod(ns, "waits", `echo "endpoints=$ENDPOINTS"`)
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "ENDPOINTS", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "late"}, Key: "list"},
	}}}
	n.create(t, pod)
	got := n.waitPod(t, ns, "waits", 10*time.Second, "CreateContainerConfigError", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, `configmap "late" not found`) {
		t.Errorf("message = %q, want it to name the missing ConfigMap", msg)
	}
	if got.Status.Phase != corev1.PodPending {
		t.Errorf("phase = %s, want Pending", got.Status.Phase)
	}
	created := time.Now()
	if _, err := n.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "late"}, Data: map[string]string{"list": "a,b"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitPod(t, ns, "waits", 3*time.Second, "Succeeded soon after the ConfigMap appears", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded
	})
	t.Logf("started %s after the ConfigMap was created", time.Since(created).Round(time.Millisecond))
	if log := n.logs(t, ns, "waits", "main", ""); log != "endpoints=a,b\n" {
		t.Errorf("log = %q", log)
	}
}
