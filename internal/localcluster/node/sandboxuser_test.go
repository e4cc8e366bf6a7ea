package node

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Who a container runs as: its securityContext over its pod's, else an
// ordinary uid on a root node and the node's own uid otherwise;
// runAsNonRoot with uid 0 is refused.
func TestSandboxUser(t *testing.T) {
	uid := func(v int64) *int64 { return ptr.To(v) }
	for _, tc := range []struct {
		name      string
		pod, ctr  *corev1.SecurityContext
		asRoot    bool
		wantUID   *int64
		wantGID   *int64
		wantError bool
	}{
		{name: "root node, nothing set: root in the pod", asRoot: true, wantUID: uid(0), wantGID: uid(0)},
		{name: "ordinary node, nothing set"},
		{name: "pod's", pod: &corev1.SecurityContext{RunAsUser: uid(5), RunAsGroup: uid(6)}, asRoot: true, wantUID: uid(5), wantGID: uid(6)},
		{name: "container's over pod's", pod: &corev1.SecurityContext{RunAsUser: uid(5)}, ctr: &corev1.SecurityContext{RunAsUser: uid(7)}, asRoot: true, wantUID: uid(7), wantGID: uid(DefaultSandboxGID)},
		{name: "root asked for", ctr: &corev1.SecurityContext{RunAsUser: uid(0)}, asRoot: true, wantUID: uid(0), wantGID: uid(DefaultSandboxGID)},
		{name: "ordinary node, uid asked for", ctr: &corev1.SecurityContext{RunAsUser: uid(42)}, wantUID: uid(42)},
		{name: "runAsNonRoot with uid 0", pod: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}, ctr: &corev1.SecurityContext{RunAsUser: uid(0)}, asRoot: true, wantError: true},
		{name: "runAsNonRoot, default uid", pod: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}, asRoot: true, wantUID: uid(NonRootSandboxUID), wantGID: uid(NonRootSandboxGID)},
		{name: "runAsNonRoot, a uid and no gid", pod: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: uid(7)}, asRoot: true, wantUID: uid(7), wantGID: uid(DefaultSandboxGID)},
	} {
		pod := &corev1.Pod{}
		if tc.pod != nil {
			pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: tc.pod.RunAsUser, RunAsGroup: tc.pod.RunAsGroup, RunAsNonRoot: tc.pod.RunAsNonRoot}
		}
		got, err := sandboxUser(pod, &corev1.Container{Name: "c", SecurityContext: tc.ctr}, tc.asRoot)
		if tc.wantError {
			var ce *configError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "runAsNonRoot") {
				t.Errorf("%s: error %v, want a configuration error naming runAsNonRoot", tc.name, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, sandboxIdentity{UID: tc.wantUID, GID: tc.wantGID}) {
			t.Errorf("%s: %v %v, error %v; want %v %v", tc.name, deref(got.UID), deref(got.GID), err, deref(tc.wantUID), deref(tc.wantGID))
		}
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
