package node

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestProjectionPayload(t *testing.T) {
	objects := fakeObjects{
		configMaps: map[string]*corev1.ConfigMap{"ml/cfg": {
			Data:       map[string]string{"a": "alpha", "b": "beta"},
			BinaryData: map[string][]byte{"bin": {0, 1}},
		}},
		secrets: map[string]*corev1.Secret{"ml/sec": {Data: map[string][]byte{"pw": []byte("x")}}},
	}
	pod := envPod()
	for _, tc := range projectionPayloadCases {
		t.Run(tc.name, func(t *testing.T) {
			v := &corev1.Volume{Name: "v", VolumeSource: tc.volume}
			if !isProjection(v) {
				t.Fatal("not a projection")
			}
			got, warnings, err := projectionPayload(pod, v, objects, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) || len(warnings) != tc.warnings {
				t.Errorf("got %v, warnings %q, %v\nwant %v, %d warnings", got, warnings, err, tc.want, tc.warnings)
			}
		})
	}
}

// cfgObjectRef names the configMap TestProjectionPayload's objects hold.
var cfgObjectRef = corev1.LocalObjectReference{Name: "cfg"}

func projectedFileOf(data string, mode int32) projectedFile {
	return projectedFile{Data: []byte(data), Mode: mode}
}

// projectionPayloadCases are volumes of envPod and the files each projects
// from TestProjectionPayload's objects.
var projectionPayloadCases = []struct {
	name     string
	volume   corev1.VolumeSource
	want     map[string]projectedFile
	wantErr  string
	warnings int
}{
	{
		name:   "every key of a configMap",
		volume: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cfgObjectRef}},
		want:   map[string]projectedFile{"a": projectedFileOf("alpha", 0o644), "b": projectedFileOf("beta", 0o644), "bin": projectedFileOf("\x00\x01", 0o644)},
	},
	{
		name: "items, paths and modes",
		volume: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cfgObjectRef, DefaultMode: ptr.To[int32](0o440),
			Items: []corev1.KeyToPath{{Key: "a", Path: "dir/a.conf"}, {Key: "b", Path: "b", Mode: ptr.To[int32](0o600)}}}},
		want: map[string]projectedFile{"dir/a.conf": projectedFileOf("alpha", 0o440), "b": projectedFileOf("beta", 0o600)},
	},
	{
		name:    "missing configMap",
		volume:  corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}},
		wantErr: `configmap "absent" not found`,
	},
	{
		name:   "missing optional configMap is empty",
		volume: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
		want:   map[string]projectedFile{},
	},
	{
		name:    "missing key",
		volume:  corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cfgObjectRef, Items: []corev1.KeyToPath{{Key: "zz", Path: "zz"}}}},
		wantErr: "non-existent key: zz",
	},
	{
		name:   "secret",
		volume: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}},
		want:   map[string]projectedFile{"pw": projectedFileOf("x", 0o644)},
	},
	{
		name: "downward API",
		volume: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "version", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['version']"}},
			{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "main", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
		}}},
		want: map[string]projectedFile{"labels": projectedFileOf("app=\"paddle\"\nrole=\"worker\"", 0o644), "version": projectedFileOf("3", 0o644), "mem": projectedFileOf("1024", 0o644)},
	},
	{
		name: "projected sources merge, with the service account's token",
		volume: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o400), Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "endpoints"}, Optional: ptr.To(true)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: cfgObjectRef, Items: []corev1.KeyToPath{{Key: "a", Path: "a"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "api"}},
		}}},
		want: map[string]projectedFile{"a": projectedFileOf("alpha", 0o400), "pw": projectedFileOf("x", 0o400), "name": projectedFileOf("trainer-0", 0o400),
			"token": projectedFileOf("token-of-"+"trainer"+"-for-api", 0o400)},
	},
	{
		name: "projected with a missing required secret",
		volume: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}},
		}}},
		wantErr: `secret "absent" not found`,
	},
}

func TestPayloadDigest(t *testing.T) {
	a := map[string]projectedFile{"x": {Data: []byte("1"), Mode: 0o644}, "y": {Data: []byte("2"), Mode: 0o644}}
	same := map[string]projectedFile{"y": {Data: []byte("2"), Mode: 0o644}, "x": {Data: []byte("1"), Mode: 0o644}}
	otherMode := map[string]projectedFile{"x": {Data: []byte("1"), Mode: 0o600}, "y": {Data: []byte("2"), Mode: 0o644}}
	shifted := map[string]projectedFile{"x": {Data: []byte("12"), Mode: 0o644}, "y": {Data: []byte(""), Mode: 0o644}}
	if payloadDigest(a) != payloadDigest(same) {
		t.Error("equal payloads differ")
	}
	if payloadDigest(a) == payloadDigest(otherMode) || payloadDigest(a) == payloadDigest(shifted) {
		t.Error("different payloads collide")
	}
}
