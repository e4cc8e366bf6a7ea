package validation_test

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestWarnings(t *testing.T) {
	noGang := func(s *validation.Settings) { s.Gang.Default = podcontract.GangNone }
	launch := func(c []string) func(*paddlev1.PaddleJob) {
		return func(j *paddlev1.PaddleJob) {
			for _, rs := range []*paddlev1.ReplicaSpec{j.Spec.PS, j.Spec.Worker, j.Spec.Heter} {
				if rs != nil {
					rs.Template.Spec.Containers[0].Command = c
				}
			}
		}
	}
	tests := []struct {
		name   string
		job    *testutil.JobWrapper
		mutate func(*paddlev1.PaddleJob)
		opts   func(*validation.Settings)
		want   string // a substring of the warnings; "": none
	}{
		{name: "a plain job", job: testutil.MakePaddleJob("j", "ns").PS(1).Workers(2)},
		{name: "the deprecated cleanPolicy", job: testutil.MakePaddleJob("j", "ns").Workers(2),
			mutate: func(j *paddlev1.PaddleJob) { j.Spec.CleanPolicy = paddlev1.CleanPodPolicyNever }, want: "spec.cleanPolicy is deprecated"},
		{name: "paddle-operator's elastic bounds", job: testutil.MakePaddleJob("j", "ns").Workers(2),
			mutate: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Limits = ptr.To[int32](4) },
			opts:   func(s *validation.Settings) { s.ElasticEtcd = true }, want: "prefer spec.elasticPolicy"},
		{name: "a pserver's elastic bounds", job: testutil.MakePaddleJob("j", "ns").PS(1).Workers(2),
			mutate: func(j *paddlev1.PaddleJob) { j.Spec.PS.Limits = ptr.To[int32](4) }, want: "spec.ps.requests and limits are ignored"},
		{name: "a schedulingPolicy no scheduler reads", job: testutil.MakePaddleJob("j", "ns").Workers(2).SchedulingPolicy(paddlev1.SchedulingPolicy{Queue: "q"}),
			opts: noGang, want: "spec.schedulingPolicy is ignored: the operator runs without a gang scheduler (--gang-scheduler=none) and no template names one (schedulerName volcano or scheduler-plugins-scheduler)"},
		{name: "a schedulingPolicy under default-scheduler with no gang scheduler", job: testutil.MakePaddleJob("j", "ns").Workers(2).SchedulingPolicy(paddlev1.SchedulingPolicy{Queue: "q"}).SchedulerName(paddlev1.ReplicaWorker, "default-scheduler"),
			opts: noGang, want: "spec.schedulingPolicy is ignored"},
		{name: "a schedulingPolicy for a template naming volcano", job: testutil.MakePaddleJob("j", "ns").Workers(2).SchedulingPolicy(paddlev1.SchedulingPolicy{Queue: "q"}).SchedulerName(paddlev1.ReplicaWorker, "volcano"),
			opts: noGang},
		{name: "an elastic job without etcd", job: testutil.MakePaddleJob("j", "ns").Workers(2),
			mutate: func(j *paddlev1.PaddleJob) { j.Spec.Elastic = ptr.To[int32](1) }, want: "PADDLE_MASTER stays unset"},
		{name: "an elastic job with the operator's etcd", job: testutil.MakePaddleJob("j", "ns").Workers(2),
			mutate: func(j *paddlev1.PaddleJob) { j.Spec.Elastic = ptr.To[int32](1) },
			opts:   func(s *validation.Settings) { s.ElasticEtcd = true }},
		{name: "elastic: 0", job: testutil.MakePaddleJob("j", "ns").Workers(2),
			mutate: func(j *paddlev1.PaddleJob) { j.Spec.Elastic = ptr.To[int32](0) }, want: "spec.elastic: 0 changes nothing"},
		{name: "a progress deadline no report can meet", job: testutil.MakePaddleJob("j", "ns").Workers(2).ProgressDeadlineSeconds(60),
			want: "spec.progressDeadlineSeconds is ignored: the operator takes no progress reports"},
		{name: "a progress deadline with the progress endpoint", job: testutil.MakePaddleJob("j", "ns").Workers(2).ProgressDeadlineSeconds(60),
			opts: func(s *validation.Settings) { s.ProgressReports = true }},
		// Paddle's launcher in parameter-server mode starts no heter trainer.
		{name: "PodIP intranet, the launcher on every role but heter", job: testutil.MakePaddleJob("j", "ns").PS(2).Workers(2),
			mutate: launch([]string{"python", "-m", "paddle.distributed.launch", "train.py"})},
		{name: "Host intranet, the launcher on both roles: pods are addressed by name", job: testutil.MakePaddleJob("j", "ns").PS(2).Workers(2).Intranet(paddlev1.IntranetHost),
			mutate: launch([]string{"sh", "-c", "python -m paddle.distributed.launch train.py"})},
		{name: "a heter trainer under the launcher", job: testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Heter(1),
			mutate: launch([]string{"sh", "-c", "python -m paddle.distributed.launch train.py"}),
			want:   `spec.heter.template runs paddle.distributed.launch, which cannot start a heter trainer: in parameter-server mode it starts only the servers and trainers of PADDLE_SERVERS_ENDPOINTS and PADDLE_TRAINERS_ENDPOINTS, none of which is a heter pod, and stops with "No container in the pod"; run the program directly`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job.Obj()
			if tc.mutate != nil {
				tc.mutate(job)
			}
			var configure []func(*validation.Settings)
			if tc.opts != nil {
				configure = append(configure, tc.opts)
			}
			got := strings.Join(validator(configure...).Warnings(job), "\n")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("warnings %q, want %q", got, tc.want)
			}
		})
	}
}

// A finished job's spec changes nothing, and the update says so.
func TestWarningsOnUpdateOfAFinishedJob(t *testing.T) {
	old := testutil.MakePaddleJob("j", "ns").Workers(2).Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobCompleted}).Obj()
	updated := old.DeepCopy()
	updated.Spec.Worker.Replicas = 3
	v := validator()
	if got := strings.Join(v.WarningsOnUpdate(old, updated), "\n"); !strings.Contains(got, "the job has Completed: changes to its spec have no effect") {
		t.Errorf("warnings %q", got)
	}
	if got := v.WarningsOnUpdate(old, old.DeepCopy()); len(got) != 0 {
		t.Errorf("an unchanged finished job: warnings %q", got)
	}
}
