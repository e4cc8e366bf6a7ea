package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// collectiveJob is the collective example as the image paddlejob/examples
// runs it, with a pause after each pass so a test can disturb it mid-run.
func collectiveJob(t testing.TB, name string, workers int32, passDelay time.Duration) *paddlev1.PaddleJob {
	t.Helper()
	job := loadJob(t, "examples/jobs/resnet.yaml")
	job.Name = name
	job.Spec.Worker.Replicas = workers
	c := &job.Spec.Worker.Template.Spec.Containers[0]
	c.Image, c.Command = "paddlejob/examples", nil
	c.Args = []string{"collective", "--pass-delay=" + passDelay.String()}
	return job
}

// trainerPID finds the process of a pod's training container on the local
// node: it has the pod's hostname and runs the example.
func trainerPID(t *testing.T, pod string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if strings.HasPrefix(string(cmd), filepath.Join(binDir, "paddlejob-examples")) && strings.Contains(string(env), "\x00HOSTNAME="+pod+"\x00") {
			return pid
		}
	}
	return 0
}

// waitLog waits until a pod's log contains text.
func waitLog(t *testing.T, ns, pod, text string) {
	t.Helper()
	deadline := time.Now().Add(jobTimeout)
	for time.Now().Before(deadline) {
		if r, err := pj.Logs(context.Background(), ns, pod, client.LogOptions{}); err == nil {
			b := make([]byte, 1<<20)
			n, _ := r.Read(b)
			r.Close()
			if strings.Contains(string(b[:n]), text) {
				return
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("%s never logged %q", pod, text)
}

func finalAUC(t *testing.T, ns, pod string) float64 {
	t.Helper()
	return parseResult(t, podLog(t, ns, pod)).AUC
}

// A worker process killed mid-training (SIGKILL, as the OOM killer or a
// preemption does) is recreated by the ExitCode policy, and the job
// finishes with the quality of an undisturbed run.
func TestKilledWorkerIsReplacedAndTheJobRecovers(t *testing.T) {
	undisturbed := collectiveJob(t, "calm", 3, 0)
	outputDir(t, undisturbed)
	done := runToEnd(t, undisturbed)
	mustComplete(t, done)
	want := finalAUC(t, done.Namespace, "calm-worker-0")

	job := collectiveJob(t, "killed", 3, time.Second)
	outputDir(t, job)
	job.Spec.Worker.RestartPolicy = paddlev1.RestartPolicyExitCode
	job.Spec.BackoffLimit = ptr.To[int32](3)
	job.Namespace = newNamespace(t)
	if _, err := pj.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	waitLog(t, job.Namespace, "killed-worker-1", "pass 2/")
	pid := trainerPID(t, "killed-worker-1")
	if pid == 0 {
		t.Fatal("no process for killed-worker-1")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed pid %d of killed-worker-1", pid)
	got, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		t.Fatal(err)
	}
	mustComplete(t, got)
	auc := finalAUC(t, got.Namespace, "killed-worker-0")
	t.Logf("AUC %.4f after the kill, %.4f undisturbed; %d restart(s)", auc, want, got.Status.RestartCount)
	if got.Status.RestartCount != 1 {
		t.Errorf("restartCount %d, want 1", got.Status.RestartCount)
	}
	if math.Abs(auc-want) > 0.01 {
		t.Errorf("AUC %.4f is more than 0.01 from the undisturbed %.4f", auc, want)
	}
}

// Restarting the operator mid-job creates no duplicate pod, and the job
// completes.
func TestOperatorRestartMidJob(t *testing.T) {
	job := collectiveJob(t, "steady", 2, time.Second)
	outputDir(t, job)
	job.Namespace = newNamespace(t)
	if _, err := pj.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	waitLog(t, job.Namespace, "steady-worker-0", "pass 1/")
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
	mustComplete(t, got)
	after, err := pj.Pods(context.Background(), job.Namespace, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 2 || after[0].UID != before[0].UID || after[1].UID != before[1].UID {
		t.Errorf("pods before the restart %d, after %d (or recreated)", len(before), len(after))
	}
}

// A 20 s deadline fails a job that would run longer, on time, with no other
// event needed to trigger it.
func TestDeadlineFailsALongJobOnTime(t *testing.T) {
	job := collectiveJob(t, "slow", 2, 10*time.Second)
	outputDir(t, job)
	job.Spec.ActiveDeadlineSeconds = ptr.To[int64](20)
	done := runToEnd(t, job)
	c := meta.FindStatusCondition(done.Status.Conditions, paddlev1.JobFailed)
	if done.Status.Phase != paddlev1.PaddleJobFailed || c == nil || c.Reason != "DeadlineExceeded" {
		t.Fatalf("phase %s, Failed condition %+v", done.Status.Phase, c)
	}
	// Status times have second precision; the wait saw the failure at once.
	deadline := done.Status.StartTime.Add(20 * time.Second)
	seen := time.Since(deadline)
	t.Logf("DeadlineExceeded recorded %s and observed %s after the deadline", c.LastTransitionTime.Sub(deadline), seen.Round(10*time.Millisecond))
	if seen > 3*time.Second {
		t.Errorf("the deadline fired %s late", seen)
	}
}

// An elastic job scaled from 2 to 4 workers and back to 3 while it trains
// completes, its workers re-forming their ring each time.
func TestElasticJobScales2To4To3(t *testing.T) {
	job := collectiveJob(t, "elastic", 2, 3*time.Second)
	outputDir(t, job)
	job.Spec.ElasticPolicy = &paddlev1.ElasticPolicy{MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](4)}
	job.Namespace = newNamespace(t)
	ctx := context.Background()
	if _, err := pj.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitLog(t, job.Namespace, "elastic-worker-0", "pass 1/")
	for _, n := range []int32{4, 3} {
		if _, err := pj.Scale(ctx, job.Namespace, job.Name, paddlev1.ReplicaWorker, n); err != nil {
			t.Fatal(err)
		}
		waitLog(t, job.Namespace, "elastic-worker-0", fmt.Sprintf("of %d", n))
		t.Logf("the workers re-formed their ring with %d members", n)
	}
	got, err := pj.WaitFor(ctx, job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		t.Fatal(err)
	}
	mustComplete(t, got)
	res := parseResult(t, podLog(t, got.Namespace, "elastic-worker-0"))
	t.Logf("test AUC %.4f (optimum %.4f) after scaling 2 -> 4 -> 3", res.AUC, res.OptimalAUC)
	if res.AUC < res.OptimalAUC-aucTolerance {
		t.Errorf("AUC %.4f too far below the optimum %.4f", res.AUC, res.OptimalAUC)
	}
}
