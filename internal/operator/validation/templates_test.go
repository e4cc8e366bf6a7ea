package validation_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestTemplates(t *testing.T) {
	podIP := corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}
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
		want: []string{`spec.worker.template.spec.containers[0].env[0].name: Invalid value: "PADDLE_TRAINER_ID": is set by the operator`,
			"a template may set only FLAGS_selected_gpus, PADDLE_DISTRI_BACKEND, PADDLE_MAX_RESTART or POD_IP of the contract's variables"},
	}, {
		name: "a job variable from the endpoints ConfigMap",
		job:  testutil.MakePaddleJob("j", "").PS(1).Workers(2).Env(paddlev1.ReplicaPS, "PADDLE_PSERVERS_IP_PORT_LIST", "a:1").Obj(),
		want: []string{`spec.ps.template.spec.containers[0].env[0].name: Invalid value: "PADDLE_PSERVERS_IP_PORT_LIST"`},
	}, {
		name: "an elastic variable",
		job:  testutil.MakePaddleJob("j", "").Workers(2).Elastic(1, 3, "http://etcd:2379").Env(paddlev1.ReplicaWorker, "PADDLE_ELASTIC_SERVER", "x:1").Obj(),
		want: []string{`env[0].name: Invalid value: "PADDLE_ELASTIC_SERVER"`},
	}, {
		name:     "a tunable variable is warned about",
		job:      testutil.MakePaddleJob("j", "").Workers(2).GPUs(paddlev1.ReplicaWorker, 2).Env(paddlev1.ReplicaWorker, "FLAGS_selected_gpus", "0").Obj(),
		wantWarn: "spec.worker.template.spec.containers[0].env[0].name sets FLAGS_selected_gpus",
	}, {
		name: "POD_IP from status.podIP is what the operator sets in PodIP intranet",
		job:  testutil.MakePaddleJob("j", "").Workers(2).Obj(),
	}, {
		name:     "POD_IP from status.podIP where pods are addressed by name is warned about",
		job:      testutil.MakePaddleJob("j", "").Workers(2).Intranet(paddlev1.IntranetService).Obj(),
		wantWarn: "sets POD_IP, which the operator sets too",
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
	tests[5].job.Spec.Worker.Template.Spec.Containers[0].Env = []corev1.EnvVar{podIP}
	tests[6].job.Spec.Worker.Template.Spec.Containers[0].Env = []corev1.EnvVar{podIP}
	tests[7].job.Spec.Worker.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	v := validator()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantFieldErrors(t, v.Validate(tc.job), tc.want...)
			warn := strings.Join(v.Warnings(tc.job), "\n")
			if (tc.wantWarn == "") != (warn == "") || !strings.Contains(warn, tc.wantWarn) {
				t.Errorf("warnings %q, want %q", warn, tc.wantWarn)
			}
		})
	}
}
