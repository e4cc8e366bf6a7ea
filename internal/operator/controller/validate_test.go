package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

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
			wantFieldErrors(t, Validate(&tc.job.Spec, tc.job.Name), tc.want...)
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

func TestValidateTemplates(t *testing.T) {
	tests := []struct {
		name     string
		job      *paddlev1.PaddleJob
		want     []string // substrings of the errors; none: valid
		wantWarn string
	}{{
		name: "a variable of the job's own",
		job:  testutil.MakePaddleJob("j", "").Workers(2).Env(paddlev1.ReplicaWorker, "PADDLE_OUTPUT_DIR", "/out").Obj(),
	}, {
		name: "PADDLE_TRAINER_ID would give every worker one id",
		job:  testutil.MakePaddleJob("j", "").Workers(2).Env(paddlev1.ReplicaWorker, "PADDLE_TRAINER_ID", "0").Obj(),
		want: []string{`spec.worker.template.spec.containers[0].env[0].name: Invalid value: "PADDLE_TRAINER_ID": is set by the operator`},
	}, {
		name: "a job variable from the endpoints ConfigMap",
		job:  testutil.MakePaddleJob("j", "").PS(1).Workers(2).Env(paddlev1.ReplicaPS, "PADDLE_PSERVERS_IP_PORT_LIST", "a:1").Obj(),
		want: []string{`spec.ps.template.spec.containers[0].env[0].name: Invalid value: "PADDLE_PSERVERS_IP_PORT_LIST"`},
	}, {
		name: "an elastic variable",
		job:  testutil.MakePaddleJob("j", "").Workers(2).Elastic(1, 3, "http://etcd:2379").Env(paddlev1.ReplicaWorker, "PADDLE_ELASTIC_SERVER", "x:1").Obj(),
		want: []string{`env[0].name: Invalid value: "PADDLE_ELASTIC_SERVER"`},
	}, {
		name: "hostNetwork in PodIP intranet",
		job:  testutil.MakePaddleJob("j", "").Workers(2).Obj(),
		want: []string{"spec.worker.template.spec.hostNetwork: Invalid value: true", "spec.intranet is PodIP", "set spec.intranet: Host"},
	}, {
		name: "hostNetwork in Host intranet is what the operator sets",
		job:  testutil.MakePaddleJob("j", "").Workers(2).Intranet(paddlev1.IntranetHost).Obj(),
	}, {
		name:     "a tunable variable is warned about",
		job:      testutil.MakePaddleJob("j", "").Workers(2).GPUs(paddlev1.ReplicaWorker, 2).Env(paddlev1.ReplicaWorker, "FLAGS_selected_gpus", "0").Obj(),
		wantWarn: "spec.worker.template.spec.containers[0].env[0].name sets FLAGS_selected_gpus",
	}, {
		name:     "a fixed port in Host intranet is warned about",
		job:      testutil.MakePaddleJob("j", "").Workers(2).Intranet(paddlev1.IntranetHost).Obj(),
		wantWarn: "spec.worker.template.spec.containers[0].ports[0].containerPort is 8080: in Host intranet it is a port of the node",
	}, {
		name: "a fixed rank in an elastic job",
		job:  testutil.MakePaddleJob("j", "").Workers(2).Elastic(1, 3, "http://etcd:2379").Env(paddlev1.ReplicaWorker, "PADDLE_TRAINER_ID", "1").Obj(),
		want: []string{`env[0].name: Invalid value: "PADDLE_TRAINER_ID": would fix the worker's rank`},
	}, {
		name: "PADDLE_RANK fixes an elastic worker's rank too",
		job:  testutil.MakePaddleJob("j", "").Workers(2).Elastic(1, 3, "http://etcd:2379").Env(paddlev1.ReplicaWorker, "PADDLE_RANK", "0").Obj(),
		want: []string{`env[0].name: Invalid value: "PADDLE_RANK": would fix the worker's rank`},
	}, {
		name:     "an elastic launcher's restart budget may be tuned",
		job:      testutil.MakePaddleJob("j", "").Workers(2).Elastic(1, 3, "http://etcd:2379").Env(paddlev1.ReplicaWorker, "PADDLE_MAX_RESTART", "100").Obj(),
		wantWarn: "spec.worker.template.spec.containers[0].env[0].name sets PADDLE_MAX_RESTART, which the operator sets too",
	}}
	tests[4].job.Spec.Worker.Template.Spec.HostNetwork = true
	tests[5].job.Spec.Worker.Template.Spec.HostNetwork = true
	tests[7].job.Spec.Worker.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(&tc.job.Spec, tc.job.Name)
			warn := strings.Join(TemplateWarnings(&tc.job.Spec), "\n")
			if (tc.wantWarn == "") != (warn == "") || !strings.Contains(warn, tc.wantWarn) {
				t.Errorf("warnings %q, want %q", warn, tc.wantWarn)
			}
			wantFieldErrors(t, errs, tc.want...)
		})
	}
}

// Every variable a pod gets from the operator is in contractEnvNames.
func TestContractEnvNamesCoverThePods(t *testing.T) {
	job := testutil.MakePaddleJob("j", "ns").UID("u").PS(1).Workers(2).Heter(1).WithGloo(1).GPUs(paddlev1.ReplicaWorker, 2).Obj()
	for _, rt := range paddlev1.ReplicaTypes {
		names := contractEnvNames(&job.Spec, rt)
		pod := newPod(job, rt, 0, portRange{First: DefaultBasePort, Count: portsPerPod(job.Spec.Replicas(rt))}, podOptions{})
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
	if msg := validateForRun(job); !strings.Contains(msg, "must be at most 1024") {
		t.Fatalf("a new generation with 5000 GPUs: %q, want the GPU bound", msg)
	}
	job.Status.ObservedGeneration = 2
	if msg := validateForRun(job); msg != "" {
		t.Errorf("an observed generation was validated again: %q", msg)
	}
}

// wantFieldErrors fails the test unless errs mention every one of want, or,
// with no want, unless errs is empty.
func wantFieldErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	if len(want) == 0 {
		if len(errs) > 0 {
			t.Fatalf("want no error, got %v", errs)
		}
		return
	}
	if len(errs) == 0 {
		t.Fatalf("want an error naming %q, got none", want)
	}
	msg := errs.ToAggregate().Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not mention %q", msg, w)
		}
	}
}
