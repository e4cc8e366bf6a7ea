package e2e

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// waitLog waits until a pod's log matches.
func waitLog(t *testing.T, pj *client.Client, ns, pod string, re *regexp.Regexp) {
	t.Helper()
	if _, ok := waitFor(jobTimeout, func() (bool, string) {
		r, err := pj.Logs(context.Background(), ns, pod, client.LogOptions{})
		if err != nil {
			return false, err.Error()
		}
		b, _ := io.ReadAll(r)
		r.Close()
		return re.Match(b), ""
	}); ok {
		return
	}
	dumpJob(t, pj, ns, strings.Join(strings.Split(pod, "-")[:1], "-"))
	t.Fatalf("%s never logged %q", pod, re)
}

// Restarting the operator mid-job creates no duplicate pod, and the job
// completes.
func TestOperatorRestartMidJob(t *testing.T) {
	pj := suiteClient
	job := testutil.MakePaddleJob("steady", "").Workers(2).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sh", "-c", "echo started; sleep 8").Obj()
	job.Namespace = newNamespace(t, pj)
	createJob(t, pj, job)
	waitLog(t, pj, job.Namespace, "steady-worker-0", regexp.MustCompile("started"))
	before, err := pj.Pods(context.Background(), job.Namespace, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := localcluster.Restart(context.Background(), opts, "paddlejob-operator"); err != nil {
		t.Fatal(err)
	}
	got, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		t.Fatal(err)
	}
	mustComplete(t, pj, got)
	after, err := pj.Pods(context.Background(), job.Namespace, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 2 || after[0].UID != before[0].UID || after[1].UID != before[1].UID {
		t.Errorf("pods before the restart %d, after %d (or recreated)", len(before), len(after))
	}
}

// A 10 s deadline fails a job that would run for 10 minutes: with no other
// event to trigger it (the job would otherwise outlast the wait), not before
// the deadline, and its pods are stopped. How soon after the deadline is
// measured by test/integration's BenchmarkActiveDeadline.
func TestDeadlineFailsALongJob(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	job := testutil.MakePaddleJob("slow", "").Workers(2).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sleep", "600").Obj()
	job.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
	done := runToEnd(t, pj, job)
	c := meta.FindStatusCondition(done.Status.Conditions, paddlev1.JobFailed)
	if done.Status.Phase != paddlev1.PaddleJobFailed || c == nil || c.Reason != "DeadlineExceeded" {
		t.Fatalf("phase %s, Failed condition %+v", done.Status.Phase, c)
	}
	// The deadline counts from the recorded start; both times have second
	// precision, so this holds exactly.
	deadline := done.Status.StartTime.Add(10 * time.Second)
	if c.LastTransitionTime.Time.Before(deadline) {
		t.Errorf("DeadlineExceeded at %s, before the deadline %s", c.LastTransitionTime, deadline)
	}
	t.Logf("DeadlineExceeded recorded %s after the deadline", c.LastTransitionTime.Sub(deadline))
	waitNoPods(t, pj, done.Namespace, done.Name)
}
