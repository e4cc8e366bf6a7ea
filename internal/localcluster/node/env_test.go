package node

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fakeObjects holds ConfigMaps and Secrets by namespace/name.
type fakeObjects struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func (f fakeObjects) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmap"), name)
}

func (f fakeObjects) ServiceAccountToken(pod *corev1.Pod, audience string, _ *int64) (string, error) {
	return "token-of-" + pod.Spec.ServiceAccountName + "-for-" + audience, nil
}

func (f fakeObjects) Secret(ns, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secret"), name)
}

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "alpha", "B": "beta", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "alpha"},
		{"$(A)-$(B)", "alpha-beta"},
		{"x$(EMPTY)y", "xy"},
		{"$(UNDEFINED)", "$(UNDEFINED)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$alpha"},
		{"$$", "$"},
		{"$", "$"},
		{"a$b", "a$b"},
		{"$(A", "$(A"},
		{"$()", "$()"},
		{"$(A)$(B", "alpha$(B"},
		{"100$", "100$"},
	}
	for _, tc := range tests {
		if got := expandVars(tc.in, lookup); got != tc.want {
			t.Errorf("expandVars(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func envPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "trainer-0", Namespace: "ml", UID: "uid-1",
			Labels:      map[string]string{"role": "worker", "app": "paddle"},
			Annotations: map[string]string{"version": "3"},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-a", ServiceAccountName: "trainer",
			Containers: []corev1.Container{{
				Name: "main",
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
				},
			}},
		},
	}
}

func TestContainerEnv(t *testing.T) {
	objects := fakeObjects{
		configMaps: map[string]*corev1.ConfigMap{"ml/cfg": {Data: map[string]string{"lr": "0.1", "epochs": "5"}}},
		secrets:    map[string]*corev1.Secret{"ml/sec": {Data: map[string][]byte{"token": []byte("t0k")}}},
	}
	addrs := podAddresses{PodIPs: []string{"127.0.1.5"}, HostIPs: []string{"127.0.0.1"}}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	for _, tc := range containerEnvCases {
		t.Run(tc.name, func(t *testing.T) {
			pod := envPod()
			c := &pod.Spec.Containers[0]
			c.Env, c.EnvFrom = tc.env, tc.envFrom
			got, err := containerEnv(pod, c, addrs, allocatable, objects)
			if tc.wantErr != "" {
				var ce *configError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ce) {
					t.Fatalf("error %v, want a configError containing %q", err, tc.wantErr)
				}
				if waitingReason(err) != reasonConfigError {
					t.Errorf("waiting reason %q", waitingReason(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.vars, tc.want) {
				t.Errorf("env = %q\nwant  %q", got.vars, tc.want)
			}
		})
	}
}

// The sources TestContainerEnv's variables come from.

func envFieldRef(p string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: p}}
}

func envResourceRef(r, divisor string) *corev1.EnvVarSource {
	s := &corev1.ResourceFieldSelector{Resource: r}
	if divisor != "" {
		s.Divisor = resource.MustParse(divisor)
	}
	return &corev1.EnvVarSource{ResourceFieldRef: s}
}

func envConfigMapKeyRef(name, key string, optional bool) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}
}

func envSecretKeyRef(name, key string, optional bool) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}
}

// containerEnvCases are envPod's container with these env and envFrom, on a
// node whose objects and addresses TestContainerEnv gives.
var containerEnvCases = []struct {
	name    string
	env     []corev1.EnvVar
	envFrom []corev1.EnvFromSource
	want    []envVar
	wantErr string
}{
	{
		name: "values and expansion of earlier variables",
		env:  []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "$(A)-$(C)"}, {Name: "C", Value: "3"}, {Name: "A", Value: "$(A)$(A)"}},
		want: []envVar{{"A", "11"}, {"B", "1-$(C)"}, {"C", "3"}},
	},
	{
		name: "field refs",
		env: []corev1.EnvVar{
			{Name: "NAME", ValueFrom: envFieldRef("metadata.name")}, {Name: "NS", ValueFrom: envFieldRef("metadata.namespace")},
			{Name: "UID", ValueFrom: envFieldRef("metadata.uid")}, {Name: "ROLE", ValueFrom: envFieldRef("metadata.labels['role']")},
			{Name: "VER", ValueFrom: envFieldRef("metadata.annotations['version']")}, {Name: "NODE", ValueFrom: envFieldRef("spec.nodeName")},
			{Name: "SA", ValueFrom: envFieldRef("spec.serviceAccountName")}, {Name: "IP", ValueFrom: envFieldRef("status.podIP")},
			{Name: "IPS", ValueFrom: envFieldRef("status.podIPs")}, {Name: "HOST", ValueFrom: envFieldRef("status.hostIP")},
			{Name: "HOSTS", ValueFrom: envFieldRef("status.hostIPs")}, {Name: "LABELS", ValueFrom: envFieldRef("metadata.labels")},
		},
		want: []envVar{{"NAME", "trainer-0"}, {"NS", "ml"}, {"UID", "uid-1"}, {"ROLE", "worker"}, {"VER", "3"},
			{"NODE", "node-a"}, {"SA", "trainer"}, {"IP", "127.0.1.5"}, {"IPS", "127.0.1.5"}, {"HOST", "127.0.0.1"},
			{"HOSTS", "127.0.0.1"}, {"LABELS", "app=\"paddle\"\nrole=\"worker\""}},
	},
	{
		name: "resource field refs with divisors and node defaults",
		env: []corev1.EnvVar{
			{Name: "CPU", ValueFrom: envResourceRef("limits.cpu", "")}, {Name: "CPU_M", ValueFrom: envResourceRef("limits.cpu", "1m")},
			{Name: "REQ_CPU", ValueFrom: envResourceRef("requests.cpu", "")}, {Name: "MEM_MI", ValueFrom: envResourceRef("limits.memory", "1Mi")},
			{Name: "REQ_MEM", ValueFrom: envResourceRef("requests.memory", "")},
		},
		want: []envVar{{"CPU", "2"}, {"CPU_M", "1500"}, {"REQ_CPU", "1"}, {"MEM_MI", "1024"}, {"REQ_MEM", "0"}},
	},
	{
		name: "configMap and secret keys, optional ones left out",
		env: []corev1.EnvVar{
			{Name: "LR", ValueFrom: envConfigMapKeyRef("cfg", "lr", false)}, {Name: "TOKEN", ValueFrom: envSecretKeyRef("sec", "token", false)},
			{Name: "NOKEY", ValueFrom: envConfigMapKeyRef("cfg", "missing", true)}, {Name: "NOCM", ValueFrom: envConfigMapKeyRef("absent", "x", true)},
			{Name: "NOSECRET", ValueFrom: envSecretKeyRef("absent", "x", true)},
		},
		want: []envVar{{"LR", "0.1"}, {"TOKEN", "t0k"}},
	},
	{
		name: "envFrom with prefix, env overrides",
		envFrom: []corev1.EnvFromSource{
			{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
		},
		env:  []corev1.EnvVar{{Name: "CFG_lr", Value: "0.5"}, {Name: "X", Value: "$(CFG_epochs)"}},
		want: []envVar{{"CFG_epochs", "5"}, {"CFG_lr", "0.5"}, {"token", "t0k"}, {"X", "5"}},
	},
	{name: "missing configMap", env: []corev1.EnvVar{{Name: "X", ValueFrom: envConfigMapKeyRef("absent", "k", false)}}, wantErr: `configmap "absent" not found`},
	{name: "missing configMap key", env: []corev1.EnvVar{{Name: "X", ValueFrom: envConfigMapKeyRef("cfg", "k", false)}}, wantErr: "couldn't find key k in ConfigMap ml/cfg"},
	{name: "missing secret", env: []corev1.EnvVar{{Name: "X", ValueFrom: envSecretKeyRef("absent", "k", false)}}, wantErr: `secret "absent" not found`},
	{name: "missing secret key", env: []corev1.EnvVar{{Name: "X", ValueFrom: envSecretKeyRef("sec", "k", false)}}, wantErr: "couldn't find key k in Secret ml/sec"},
	{
		name:    "missing envFrom configMap",
		envFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}}},
		wantErr: `configmap "absent" not found`,
	},
	{name: "unsupported field", env: []corev1.EnvVar{{Name: "X", ValueFrom: envFieldRef("spec.schedulerName")}}, wantErr: "unsupported field path"},
}
