package v1

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestSetDefaults(t *testing.T) {
	role := func(n int32) *ReplicaSpec { return &ReplicaSpec{Replicas: n} }
	one := int32(1)
	for _, tc := range []struct {
		name      string
		spec      PaddleJobSpec
		wantPS    RestartPolicy
		wantWork  RestartPolicy
		wantScope RestartScope
	}{
		{name: "parameter server", spec: PaddleJobSpec{PS: role(1), Worker: role(2)},
			wantPS: RestartPolicyNever, wantWork: RestartPolicyNever, wantScope: RestartScopeJob},
		{name: "heter", spec: PaddleJobSpec{PS: role(1), Worker: role(1), Heter: role(1)},
			wantPS: RestartPolicyNever, wantWork: RestartPolicyNever, wantScope: RestartScopeJob},
		{name: "collective", spec: PaddleJobSpec{Worker: role(2)},
			wantWork: RestartPolicyNever, wantScope: RestartScopePod},
		{name: "a template restarting on failure", spec: PaddleJobSpec{Worker: &ReplicaSpec{Replicas: 2,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure}}}},
			wantWork: RestartPolicyOnFailure, wantScope: RestartScopePod},
		{name: "elastic parameter server", spec: PaddleJobSpec{PS: role(1), Worker: role(2), Elastic: &one},
			wantPS: RestartPolicyNever, wantWork: RestartPolicyOnFailure, wantScope: RestartScopePod},
		{name: "explicit values kept", spec: PaddleJobSpec{PS: &ReplicaSpec{Replicas: 1, RestartPolicy: RestartPolicyExitCode},
			Worker: &ReplicaSpec{Replicas: 2, RestartPolicy: RestartPolicyExitCode}, RestartScope: RestartScopePod},
			wantPS: RestartPolicyExitCode, wantWork: RestartPolicyExitCode, wantScope: RestartScopePod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.SetDefaults()
			if spec.PS != nil && spec.PS.RestartPolicy != tc.wantPS {
				t.Errorf("ps restartPolicy %q, want %q", spec.PS.RestartPolicy, tc.wantPS)
			}
			if spec.Worker.RestartPolicy != tc.wantWork {
				t.Errorf("worker restartPolicy %q, want %q", spec.Worker.RestartPolicy, tc.wantWork)
			}
			if spec.Heter != nil && spec.Heter.RestartPolicy != RestartPolicyNever {
				t.Errorf("heter restartPolicy %q, want Never", spec.Heter.RestartPolicy)
			}
			if spec.RestartScope != tc.wantScope {
				t.Errorf("restartScope %q, want %q", spec.RestartScope, tc.wantScope)
			}
			if spec.Intranet != IntranetPodIP || spec.BackoffLimit == nil || *spec.BackoffLimit != 6 {
				t.Errorf("intranet %q, backoffLimit %v: want PodIP and 6", spec.Intranet, spec.BackoffLimit)
			}
			again := spec
			again.SetDefaults()
			if a, b := mustJSON(t, spec), mustJSON(t, again); a != b {
				t.Errorf("a second SetDefaults changed the spec:\n%s\n%s", a, b)
			}
		})
	}
}

// TestDefaultsMatchTheCRD holds the default markers kubectl explain shows
// to the constants SetDefaults applies.
func TestDefaultsMatchTheCRD(t *testing.T) {
	spec := crdSpecSchema(t)
	for _, tc := range []struct {
		field string
		want  any
	}{
		{"intranet", DefaultIntranet},
		{"backoffLimit", DefaultBackoffLimit},
	} {
		def := spec.Properties[tc.field].Default
		if def == nil {
			t.Errorf("spec.%s has no default marker", tc.field)
			continue
		}
		if got, want := string(def.Raw), mustJSON(t, tc.want); got != want {
			t.Errorf("spec.%s: the CRD's default %s, SetDefaults' %s", tc.field, got, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
