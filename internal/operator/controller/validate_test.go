package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestValidateGPUs(t *testing.T) {
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
		job:  testutil.MakePaddleJob("j", "").Workers(2).GPUs(paddlev1.ReplicaWorker, MaxGPUsPerPod).Obj(),
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
		want: []string{gpuPath, "must not be negative"},
	}, {
		name: "a request without a limit",
		job:  testutil.MakePaddleJob("j", "").Workers(2).Obj(),
		want: []string{"spec.worker.template.spec.containers[0].resources.requests[nvidia.com/gpu]", "must be at most 1024"},
	}, {
		name: "two containers over the bound in sum",
		job:  testutil.MakePaddleJob("j", "").Workers(2).GPUs(paddlev1.ReplicaWorker, 1000).Obj(),
		want: []string{"spec.worker.template.spec.containers: Invalid value: \"1100 nvidia.com/gpu\"", "1100 nvidia.com/gpu in all; at most 1024"},
	}}
	tests[6].job.Spec.Worker.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{gpuResource: resource.MustParse("5000")}
	sidecar := corev1.Container{Name: "side", Image: "i", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{gpuResource: resource.MustParse("100")}}}
	tests[7].job.Spec.Worker.Template.Spec.Containers = append(tests[7].job.Spec.Worker.Template.Spec.Containers, sidecar)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(&tc.job.Spec, tc.job.Name)
			if len(tc.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("want no error, got %v", errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("want an error naming %q, got none", tc.want)
			}
			msg := errs.ToAggregate().Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
		})
	}
}

// Without the webhook, a job asking for too many GPUs fails at once: no pod,
// no port arithmetic, no loop over its devices.
func TestTooManyGPUsFailTheJob(t *testing.T) {
	job := testutil.MakePaddleJob("gpus", "ns").UID("gpus-uid").Workers(2).GPUs(paddlev1.ReplicaWorker, 4294967294).Obj()
	f := newFixture(t, Options{}, job)
	got := f.reconcile(t, job)
	passWant{phase: paddlev1.PaddleJobFailed, conditions: map[string]wantCondition{
		paddlev1.JobFailed: {status: "True", reason: ReasonInvalidSpec},
	}}.check(t, got)
	if c := findCondition(got.job, paddlev1.JobFailed); !strings.Contains(c.Message, "resources.limits[nvidia.com/gpu]") {
		t.Errorf("condition message %q does not name the field", c.Message)
	}
}

// podGPUs saturates: what Validate refuses cannot wrap the port arithmetic.
func TestPortsPerPodDoNotWrap(t *testing.T) {
	job := testutil.MakePaddleJob("j", "").Workers(1).GPUs(paddlev1.ReplicaWorker, 4294967294).Obj()
	if n := portsPerPod(job.Spec.Worker); n <= 0 || n > MaxGPUsPerPod+1+extraPorts {
		t.Errorf("portsPerPod = %d", n)
	}
}
