package validation_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestGlooSharedDirectory(t *testing.T) {
	// psJob is a parameter-server job at a Gloo level whose ps and worker
	// containers mount /shared and set PADDLE_GLOO_FS_PATH as given ("": not).
	psJob := func(level int32, psDir, workerDir string) *paddlev1.PaddleJob {
		job := testutil.MakePaddleJob("j", "ns").PS(2).Workers(2).WithGloo(level).Obj()
		for rt, dir := range map[paddlev1.ReplicaType]string{paddlev1.ReplicaPS: psDir, paddlev1.ReplicaWorker: workerDir} {
			c := &job.Spec.Replicas(rt).Template.Spec.Containers[0]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "shared", MountPath: "/shared"})
			if dir != "" {
				c.Env = append(c.Env, corev1.EnvVar{Name: validation.GlooFSPath, Value: dir})
			}
		}
		return job
	}
	const levelTwoOverFiles = "spec.withGloo is 2 over a shared directory"
	const levelTwoOverHTTP = `spec.withGloo is 2 but no container of spec.ps or spec.worker sets PADDLE_GLOO_FS_PATH: the operator then gives the job Gloo's HTTP store, over which Paddle builds the workers' group only, not the servers' or the group of all processes: the workers run at level 2, the servers without Gloo`
	tests := []struct {
		name     string
		job      *paddlev1.PaddleJob
		want     []string // substrings of the errors; none: valid
		wantWarn string   // a substring of the warnings; "": none
	}{
		{name: "level 2 without a directory: accepted, warned (seed 004's jobs keep working)", job: psJob(2, "", ""), wantWarn: levelTwoOverHTTP},
		{name: "level 1 without a directory: the workers' group is all it asks", job: psJob(1, "", "")},
		{name: "level 2 with one directory everywhere: the trainers must wait for the servers", job: psJob(2, "/shared/gloo", "/shared/gloo"),
			wantWarn: "spec.withGloo is 2 over a shared directory: every parameter server joins the group of all processes inside fleet.init()"},
		{name: "level 1 with one directory", job: psJob(1, "/shared/gloo", "/shared/gloo")},
		{name: "two directories", job: psJob(2, "/shared/a", "/shared/b"),
			want: []string{`spec.worker.template.spec.containers[0].env[0].value: Invalid value: "/shared/b": must be the same in every container of spec.ps and spec.worker (spec.ps.template.spec.containers[0].env[0] is "/shared/a")`}, wantWarn: levelTwoOverFiles},
		{name: "a directory on the servers only", job: psJob(2, "/shared/gloo", ""),
			want: []string{`spec.worker.template.spec.containers[0].env: Required value: spec.ps.template.spec.containers[0].env[0] sets PADDLE_GLOO_FS_PATH: set it in spec.worker's template too`}, wantWarn: levelTwoOverFiles},
		{name: "a relative directory", job: psJob(2, "gloo", "gloo"),
			want: []string{`spec.ps.template.spec.containers[0].env[0].value: Invalid value: "gloo": must be an absolute path`}, wantWarn: levelTwoOverFiles},
		{name: "a directory on no volume", job: psJob(2, "/tmp/gloo", "/tmp/gloo"),
			wantWarn: `spec.ps.template.spec.containers[0].env[0]: PADDLE_GLOO_FS_PATH "/tmp/gloo" is on none of the container's volumeMounts`},
		{name: "Gloo off: the directory is not read, nothing to check", job: psJob(0, "/a", "b")},
		{name: "collective level 2: nothing to warn about, no servers", job: testutil.MakePaddleJob("j", "ns").Workers(2).WithGloo(2).Obj()},
	}
	launched := psJob(2, "/shared/gloo", "/shared/gloo")
	launched.Spec.Worker.Template.Spec.Containers[0].Command = []string{"python", "-m", "paddle.distributed.launch", "train.py"}
	tests = append(tests, struct {
		name     string
		job      *paddlev1.PaddleJob
		want     []string
		wantWarn string
	}{name: "the directory under Paddle's launcher: refused", job: launched,
		want:     []string{"spec.worker.template.spec.containers[0].command: Forbidden: runs paddle.distributed.launch, which gives the processes it starts Gloo's HTTP store (PADDLE_GLOO_RENDEZVOUS=3) and a PADDLE_GLOO_FS_PATH of its own"},
		wantWarn: "spec.withGloo is 2 over a shared directory"})
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
