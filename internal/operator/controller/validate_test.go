package controller

import (
	"strings"
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

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

// Every variable a pod gets from the operator is in the contract's
// environment, which validation refuses templates to override.
func TestContractEnvCoversThePods(t *testing.T) {
	job := testutil.MakePaddleJob("j", "ns").UID("u").PS(1).Workers(2).Heter(1).WithGloo(1).GPUs(paddlev1.ReplicaWorker, 2).Obj()
	for _, rt := range paddlev1.ReplicaTypes {
		names := map[string]bool{}
		for _, e := range podcontract.FirstPodEnv(&job.Spec, rt) {
			names[e.Name] = true
		}
		pod := newPod(job, rt, 0, podcontract.PortRange{First: podcontract.DefaultBasePort, Count: podcontract.PortsPerPod(job.Spec.Replicas(rt))}, podOptions{})
		for _, e := range pod.Spec.Containers[0].Env {
			if !names[e.Name] && e.Name != envPIR { // the template may set the tuning's (tuning.go)
				t.Errorf("%s pods get %s, which the contract's names lack", rt, e.Name)
			}
		}
	}
}

// The controller validates a spec once per generation: a changed spec is
// checked again, one the status has observed is not measured on every pass.
func TestValidateForRunChecksEachGenerationOnce(t *testing.T) {
	job := testutil.MakePaddleJob("j", "ns").Workers(2).GPUs(paddlev1.ReplicaWorker, 5000).Obj()
	job.Generation, job.Status.ObservedGeneration = 2, 1
	r := NewReconciler(nil, nil, Options{})
	if msg := r.validateForRun(job); !strings.Contains(msg, "must be at most 1024") {
		t.Fatalf("a new generation with 5000 GPUs: %q, want the GPU bound", msg)
	}
	job.Status.ObservedGeneration = 2
	if msg := r.validateForRun(job); msg != "" {
		t.Errorf("an observed generation was validated again: %q", msg)
	}
}
