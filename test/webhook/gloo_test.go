package webhook

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// withGloo 2 without a shared directory is accepted with a warning (seed
// 004's manifests keep working); a shared directory the pods would not agree
// on is refused, naming the field.
func TestGlooLevelTwo(t *testing.T) {
	ns := newNamespace(t)
	job := testutil.MakePaddleJob("gloo", ns).PS(2).Workers(2).WithGloo(2).Obj()
	warnings.take()
	if err := k8s.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(warnings.take(), "\n")
	if !strings.Contains(got, "spec.withGloo is 2 but no container of spec.ps or spec.worker sets PADDLE_GLOO_FS_PATH") {
		t.Errorf("warnings %q", got)
	}

	shared := testutil.MakePaddleJob("shared", ns).PS(2).Workers(2).WithGloo(2).Obj()
	for rt, dir := range map[paddlev1.ReplicaType]string{paddlev1.ReplicaPS: "/shared/gloo", paddlev1.ReplicaWorker: "/shared/gloo"} {
		c := &shared.Spec.Replicas(rt).Template.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "shared", MountPath: "/shared"})
		c.Env = append(c.Env, corev1.EnvVar{Name: "PADDLE_GLOO_FS_PATH", Value: dir})
		shared.Spec.Replicas(rt).Template.Spec.Volumes = append(shared.Spec.Replicas(rt).Template.Spec.Volumes,
			corev1.Volume{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	split := shared.DeepCopy()
	split.Name = "split"
	split.Spec.Worker.Template.Spec.Containers[0].Env[0].Value = "/shared/other"
	if err := k8s.Create(context.Background(), shared); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(warnings.take(), "\n"); strings.Contains(got, "PADDLE_GLOO_FS_PATH") {
		t.Errorf("a job with one shared directory was warned: %q", got)
	}
	err := k8s.Create(context.Background(), split)
	want := `spec.worker.template.spec.containers[0].env[0].value: Invalid value: "/shared/other": must be the same in every container of spec.ps and spec.worker`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v\nwant %q", err, want)
	}
}
