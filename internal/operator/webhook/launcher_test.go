package webhook

import (
	"strings"
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestLauncherWarnings(t *testing.T) {
	launch := func(rts ...paddlev1.ReplicaType) func(*paddlev1.PaddleJob) {
		return func(j *paddlev1.PaddleJob) {
			for _, rt := range rts {
				c := &j.Spec.Replicas(rt).Template.Spec.Containers[0]
				c.Command, c.Args = []string{"sh", "-c"}, []string{"python -m paddle.distributed.launch train.py"}
			}
		}
	}
	tests := []struct {
		name  string
		job   *testutil.JobWrapper
		apply []func(*paddlev1.PaddleJob)
		want  []string // substrings of the one warning; none: no warning
	}{{
		name:  "PodIP intranet: every pod has an address of its own",
		job:   testutil.MakePaddleJob("wd", "ns").PS(2).Workers(2),
		apply: []func(*paddlev1.PaddleJob){launch(paddlev1.ReplicaPS, paddlev1.ReplicaWorker)},
	}, {
		name:  "Host intranet, the launcher on both roles: pods are addressed by name",
		job:   testutil.MakePaddleJob("wd", "ns").PS(2).Workers(2).Intranet(paddlev1.IntranetHost),
		apply: []func(*paddlev1.PaddleJob){launch(paddlev1.ReplicaPS, paddlev1.ReplicaWorker)},
	}, {
		name: "Host intranet, the role maker run directly",
		job:  testutil.MakePaddleJob("wd", "ns").PS(2).Workers(2).Intranet(paddlev1.IntranetHost),
	}, {
		name: "Host intranet, collective: the launcher meets at PADDLE_MASTER",
		job:  testutil.MakePaddleJob("wd", "ns").Workers(2).Intranet(paddlev1.IntranetHost),
		apply: []func(*paddlev1.PaddleJob){func(j *paddlev1.PaddleJob) {
			j.Spec.Worker.Template.Spec.Containers[0].Command = []string{"python3", "-m", "paddle.distributed.launch", "train.py"}
		}},
	}, {
		name:  "a heter trainer under the launcher",
		job:   testutil.MakePaddleJob("wd", "ns").PS(1).Workers(2).Heter(1),
		apply: []func(*paddlev1.PaddleJob){launch(paddlev1.ReplicaHeter)},
		want:  []string{"spec.heter.template runs paddle.distributed.launch, which cannot start a heter trainer", "No container in the pod", "run the program directly"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job.Obj()
			for _, f := range tc.apply {
				f(job)
			}
			got := launcherWarnings(job)
			if len(tc.want) == 0 {
				if len(got) > 0 {
					t.Errorf("warnings %q, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("warnings %q, want one", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("warning %q does not say %q", got[0], w)
				}
			}
		})
	}
}
