package validation_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestGPUs(t *testing.T) {
	gpuPath := "spec.worker.template.spec.containers[0].resources.limits[nvidia.com/gpu]"
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		want []string // substrings of the errors; none: valid
	}{{
		name: "8 GPUs",
		job:  testutil.MakePaddleJob("j", "").Workers(2).GPUs(paddlev1.ReplicaWorker, 8).Obj(),
	}, {
		name: "the most GPUs",
		job:  testutil.MakePaddleJob("j", "").Workers(2).GPUs(paddlev1.ReplicaWorker, validation.MaxGPUsPerPod).Obj(),
	}, {
		name: "100000 GPUs would take ports past 65535",
		job:  testutil.MakePaddleJob("j", "").Workers(2).GPUs(paddlev1.ReplicaWorker, 100000).Obj(),
		want: []string{gpuPath, "Invalid value: \"100k\"", "must be at most 1024"},
	}, {
		name: "4294967294 GPUs would wrap PADDLE_PORTS_NUM to -2",
		job:  testutil.MakePaddleJob("j", "").Workers(2).GPUs(paddlev1.ReplicaWorker, 4294967294).Obj(),
		want: []string{gpuPath, "must be at most 1024"},
	}, {
		name: "2e9 GPUs on a ps",
		job:  testutil.MakePaddleJob("j", "").PS(1).Workers(2).GPUs(paddlev1.ReplicaPS, 2e9).Obj(),
		want: []string{"spec.ps.template.spec.containers[0].resources.limits[nvidia.com/gpu]", "must be at most 1024"},
	}, {
		name: "a negative count",
		job:  testutil.MakePaddleJob("j", "").Workers(2).GPUs(paddlev1.ReplicaWorker, -3).Obj(),
		want: []string{gpuPath, "must be 0-1024, not negative"},
	}, {
		name: "a request without a limit",
		job:  testutil.MakePaddleJob("j", "").Workers(2).Obj(),
		want: []string{"spec.worker.template.spec.containers[0].resources.requests[nvidia.com/gpu]", "must be at most 1024"},
	}, {
		name: "two containers over the bound in sum",
		job:  testutil.MakePaddleJob("j", "").Workers(2).GPUs(paddlev1.ReplicaWorker, 1000).Obj(),
		want: []string{"spec.worker.template.spec.containers: Invalid value: \"1100 nvidia.com/gpu\"", "1100 nvidia.com/gpu in all; at most 1024"},
	}}
	tests[6].job.Spec.Worker.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("5000")}
	sidecar := corev1.Container{Name: "side", Image: "i", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("100")}}}
	tests[7].job.Spec.Worker.Template.Spec.Containers = append(tests[7].job.Spec.Worker.Template.Spec.Containers, sidecar)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { validate(t, tc.job, tc.want...) })
	}
}
