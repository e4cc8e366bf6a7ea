package dashboard

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// The job page shows why a job failed: the explanation of a known failure
// and the failed container's last lines; its pod row the line that says
// what failed, not the whole end of the log.
func TestJobViewExplainsTheFailure(t *testing.T) {
	log, err := os.ReadFile(filepath.Join("..", "paddlefailure", "testdata", "logs", "collective-program-in-ps-job-3.0.0.log"))
	if err != nil {
		t.Fatal(err)
	}
	job := testutil.MakePaddleJob("mm", "ns").PS(1).Workers(1).Env(paddlev1.ReplicaPS, "PADDLE_PSERVERS_IP_PORT_LIST", "10.0.0.5:23000").Obj()
	ps := testutil.MakePod(job, paddlev1.ReplicaPS, 0).Failed("paddle", 1).Obj()
	ps.Spec.Containers[0].Env = job.Spec.PS.Template.Spec.Containers[0].Env
	ps.Status.ContainerStatuses[0].State.Terminated.Message = string(log)
	worker := testutil.MakePod(job, paddlev1.ReplicaWorker, 0).Running("10.0.0.6").Obj()

	v := viewOf(client.Snapshot{Job: job, Pods: []corev1.Pod{*ps, *worker}}, nil)
	f := v.Failure
	if f == nil || f.Explanation == nil || f.Explanation.ID != "collective-program-in-ps-job" || f.Pod != "mm-ps-0" || f.Container != "paddle" ||
		*f.ExitCode != 1 || f.LastLines != string(log) {
		t.Fatalf("failure %+v, want the pserver's, explained, with its last lines", f)
	}
	if r := v.Pods[0]; r.Message != "AssertionError" || r.Known != "collective-program-in-ps-job" || *r.ExitCode != 1 {
		t.Errorf("the pserver's row: %+v, want its key line and its known failure", r)
	}
	if r := v.Pods[1]; r.Known != "" || r.Message != "" {
		t.Errorf("the running worker's row: %+v", r)
	}

	// The pods are gone: the conditions keep the explanation.
	job.Status.Conditions = []metav1.Condition{{Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: "PodFailed",
		Message: `pod mm-ps-0: container "paddle" exited with code 1 (Error): AssertionError. Known failure [collective-program-in-ps-job]: C. Fix: F. See docs/paddle-known-issues.md#x`}}
	v = viewOf(client.Snapshot{Job: job}, nil)
	if f := v.Failure; f == nil || f.Explanation == nil || f.Explanation.Cause != "C." || f.Pod != "" || f.LastLines != "" {
		t.Errorf("failure without pods %+v, want the conditions' explanation alone", f)
	}

	job.Status.Conditions = nil
	if v := viewOf(client.Snapshot{Job: job, Pods: []corev1.Pod{*worker}}, nil); v.Failure != nil {
		t.Errorf("a job that did not fail shows the failure %+v", v.Failure)
	}
}
