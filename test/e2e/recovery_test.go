package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/transition"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// A parameter-server job survives the failures Paddle jobs meet — a crashed
// parameter server, a trainer killed as the OOM killer kills, a training that
// hangs — because the operator restarts it as a whole (docs/lifecycle.md),
// and ends as well as an undisturbed run.

// aucTolerance bounds how far a disturbed run's final AUC may be from an
// undisturbed one's.
const restartedAUCTolerance = 0.01

// undisturbed is trainer 0's final test AUC of the wide & deep example run
// once without disturbance, for the tests that compare a disturbed run.
var undisturbed struct {
	once sync.Once
	auc  float64
}

func undisturbedAUC(t *testing.T, pj *client.Client) float64 {
	t.Helper()
	undisturbed.once.Do(func() {
		job := loadJob(t, "examples/jobs/wide-and-deep.yaml")
		job.Name = "calm"
		outputDir(t, job)
		done, logs := runReadingLogs(t, pj, job)
		undisturbed.auc = checkPSJob(t, done, workerLogs(logs)).AUC
	})
	if undisturbed.auc == 0 {
		t.Fatal("the undisturbed run failed (see the first test that ran it)")
	}
	return undisturbed.auc
}

// paddleProcess finds the main process of a pod's container running a
// Paddle program (python ... train.py) on the local node.
func paddleProcess(t *testing.T, pod string) int {
	t.Helper()
	pid := findPaddleProcess(pod)
	if pid == 0 {
		t.Fatalf("no Paddle process for %s", pod)
	}
	return pid
}

func findPaddleProcess(pod string) int {
	return findPodPython(pod, func(args []string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return strings.HasSuffix(a, "train.py") })
	})
}

// signalMidTraining runs the wide & deep example and sends sig to the
// Paddle process of its pod victim once trainer 0 has finished its first
// pass, then waits for the job to finish.
func signalMidTraining(t *testing.T, pj *client.Client, name, victim string, sig syscall.Signal) (*paddlev1.PaddleJob, map[string]string) {
	t.Helper()
	job := loadJob(t, "examples/jobs/wide-and-deep.yaml")
	job.Name = name
	job.Namespace = newNamespace(t, pj)
	out := outputDir(t, job)
	createJob(t, pj, job) // restartPolicy ExitCode on both roles (recoverable)
	waitLog(t, pj, job.Namespace, name+"-worker-0", regexp.MustCompile(`pass 1/\d+: `))
	// Trainer 0 checkpoints each pass: the restarted job resumes from it.
	waitFile(t, filepath.Join(out, "pass-00000", "checkpoint.json"))
	pod := name + "-" + victim
	pid := paddleProcess(t, pod)
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %s to pid %d, the Paddle process of %s, after trainer 0's first pass", unixSignalName(sig), pid, pod)
	done, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		dumpJob(t, pj, job.Namespace, job.Name)
		t.Fatal(err)
	}
	mustComplete(t, pj, done)
	return done, workerLogs(jobLogs(t, pj, done))
}

func unixSignalName(sig syscall.Signal) string { return unix.SignalName(sig) }

// checkRestartedOnce asserts that the job's first restart was the one the
// test caused, as the job's events keep it (the Restarting condition's
// transitions, ConditionChanged), naming what caused it, and that the job
// runs (or ran) again. A restart after it may only be the progress
// deadline's: Paddle's GEO start-up hang (docs/paddle-known-issues.md) also
// strikes a restarted parameter-server job, and the deadline recovering it
// is the product at work, not a retry of the test; each is logged.
func checkRestartedOnce(t *testing.T, pj *client.Client, done *paddlev1.PaddleJob, what ...string) {
	t.Helper()
	c := meta.FindStatusCondition(done.Status.Conditions, paddlev1.JobRestarting)
	if done.Status.RestartCount < 1 || c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Restarted" {
		t.Fatalf("restartCount %d, Restarting condition %+v; want a restart, over", done.Status.RestartCount, c)
	}
	restarts := restartTransitions(t, pj, done)
	for _, w := range what {
		if !strings.Contains(restarts[0].Message, w) {
			t.Errorf("the first restart %q does not say %q", restarts[0].Message, w)
		}
	}
	for _, r := range restarts[1:] {
		if r.Reason != "ProgressDeadlineExceeded" {
			t.Errorf("restart %d (%s): %s; after the test's own, only the progress deadline's may follow", r.Restarts, r.Reason, r.Message)
			continue
		}
		t.Logf("restart %d: the progress deadline recovered a stalled start: %s", r.Restarts, r.Message)
	}
	t.Logf("Restarting: %s", restarts[0].Message)
}

// restartTransitions are the job's Restarting=True transitions, one per
// restart, in order, read from its events (the recorder sends them a moment
// after each status write).
func restartTransitions(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) []transition.Parsed {
	t.Helper()
	var out []transition.Parsed
	poll(t, 30*time.Second, "an event for each restart", func() (bool, string) {
		events, err := pj.JobEvents(context.Background(), job.Namespace, job.Name)
		if err != nil {
			t.Fatal(err)
		}
		out = out[:0]
		for _, e := range events {
			if p, ok := transition.Parse(e.Message); ok && p.Type == paddlev1.JobRestarting && p.Status == string(metav1.ConditionTrue) {
				out = append(out, p)
			}
		}
		slices.SortFunc(out, func(a, b transition.Parsed) int { return int(a.Restarts - b.Restarts) })
		return len(out) == int(job.Status.RestartCount), fmt.Sprintf("%d of %d", len(out), job.Status.RestartCount)
	})
	return out
}

// checkAUCLikeUndisturbed asserts the restarted trainers resumed from the
// first pass's checkpoint and trainer 0 ended within the tolerance of an
// undisturbed run.
func checkAUCLikeUndisturbed(t *testing.T, pj *client.Client, done *paddlev1.PaddleJob, logs map[string]string) {
	t.Helper()
	for pod, log := range logs {
		if !regexp.MustCompile(`(?m)^resumed from pass-\d{5} `).MatchString(log) {
			t.Errorf("%s did not resume from a checkpoint:\n%s", pod, tail(log))
		}
	}
	got := checkPSJob(t, done, logs).AUC
	want := undisturbedAUC(t, pj)
	t.Logf("test AUC %.4f after the restart, %.4f undisturbed", got, want)
	if math.Abs(got-want) > restartedAUCTolerance {
		t.Errorf("test AUC %.4f is more than %.2f from the undisturbed run's %.4f", got, restartedAUCTolerance, want)
	}
}

// Paddle 3.0's MKL can SIGSEGV in a parameter server
// (docs/paddle-known-issues.md): the whole job restarts once and ends as
// well as an undisturbed run.
func TestParameterServerCrashRestartsTheJob(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	undisturbedAUC(t, pj)
	done, logs := signalMidTraining(t, pj, "segv", "ps-1", syscall.SIGSEGV)
	checkRestartedOnce(t, pj, done, `pod segv-ps-1: container "paddle" exited with code 139 (signal SIGSEGV`, "restarting all 4 pods")
	checkAUCLikeUndisturbed(t, pj, done, logs)
}

// A trainer killed as the OOM killer kills (SIGKILL) restarts the whole job.
func TestKilledTrainerRestartsTheJob(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	undisturbedAUC(t, pj)
	done, logs := signalMidTraining(t, pj, "oom", "worker-1", syscall.SIGKILL)
	checkRestartedOnce(t, pj, done, `pod oom-worker-1: container "paddle" exited with code 137 (signal SIGKILL`)
	checkAUCLikeUndisturbed(t, pj, done, logs)
}

// A trainer that hangs — stopped with SIGSTOP — holds the whole job; a
// progress deadline catches it. Stopped as it starts, before its first
// report, its peers wait for it at Paddle's start-up barrier (as in Paddle
// 3.0's GEO start-up hang) and no report comes: with restartPolicy ExitCode
// the job is restarted and completes. Stopped mid-training under Never, the
// job fails with ProgressDeadlineExceeded, the message naming the last report.
func TestHungTrainerMeetsTheProgressDeadline(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	hang := func(t *testing.T, name string, policy paddlev1.RestartPolicy, after *regexp.Regexp) *paddlev1.PaddleJob {
		t.Helper()
		job := loadJob(t, "examples/jobs/wide-and-deep.yaml")
		job.Name = name
		job.Namespace = newNamespace(t, pj)
		outputDir(t, job)
		// Above the start-up to the first report on two loaded cores.
		job.Spec.ProgressDeadlineSeconds = ptr.To[int64](45)
		for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
			rs := job.Spec.Replicas(rt)
			rs.RestartPolicy = policy
			// A stopped process ignores SIGTERM: the grace period is how
			// long its deletion takes.
			rs.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
		}
		createJob(t, pj, job)
		if after != nil {
			waitLog(t, pj, job.Namespace, name+"-worker-0", after)
		}
		pod := name + "-worker-1"
		pid := waitPaddleProcess(t, pj, job.Namespace, pod)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Logf("stopped pid %d, the Paddle process of %s", pid, pod)
		done, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
		if err != nil {
			dumpJob(t, pj, job.Namespace, job.Name)
			t.Fatal(err)
		}
		return done
	}
	t.Run("before its first report, under ExitCode", func(t *testing.T) {
		done := hang(t, "hang", paddlev1.RestartPolicyExitCode, nil)
		mustComplete(t, pj, done)
		checkRestartedOnce(t, pj, done, "after no progress reported in the", "(progressDeadlineSeconds 45): no report came yet")
		checkPSJob(t, done, workerLogs(jobLogs(t, pj, done)))
	})
	t.Run("mid-training, under Never", func(t *testing.T) {
		done := hang(t, "stuck", paddlev1.RestartPolicyNever, regexp.MustCompile(`pass 1/\d+: `))
		c := meta.FindStatusCondition(done.Status.Conditions, paddlev1.JobFailed)
		if done.Status.Phase != paddlev1.PaddleJobFailed || c == nil || c.Reason != "ProgressDeadlineExceeded" {
			t.Fatalf("phase %s, Failed condition %+v; want Failed with ProgressDeadlineExceeded", done.Status.Phase, c)
		}
		if !regexp.MustCompile(`no progress reported for \S+ \(progressDeadlineSeconds 45\): the last report came at \S+ from pod stuck-worker-[01]`).MatchString(c.Message) {
			t.Errorf("Failed message %q does not name the last report", c.Message)
		}
		t.Logf("Failed: %s", c.Message)
	})
}

// waitFile waits until a file exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, jobTimeout, true, func(context.Context) (bool, error) {
		_, err := os.Stat(path)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("%s never appeared: %v", path, err)
	}
}

// waitPaddleProcess waits until a pod's Paddle program runs on the local
// node, and returns its pid.
func waitPaddleProcess(t *testing.T, pj *client.Client, ns, pod string) int {
	t.Helper()
	var pid int
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, jobTimeout, true, func(context.Context) (bool, error) {
		pid = findPaddleProcess(pod)
		return pid != 0, nil
	})
	if err != nil {
		dumpJob(t, pj, ns, pod[:strings.LastIndex(pod, "-worker-")])
		t.Fatalf("no Paddle process for %s: %v", pod, err)
	}
	return pid
}
