package e2e

import (
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// waitLog waits until a pod's log matches.
func waitLog(t *testing.T, ns, pod string, re *regexp.Regexp) {
	t.Helper()
	deadline := time.Now().Add(jobTimeout)
	for time.Now().Before(deadline) {
		if r, err := pj.Logs(context.Background(), ns, pod, client.LogOptions{}); err == nil {
			b, _ := io.ReadAll(r)
			r.Close()
			if re.Match(b) {
				return
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	dumpJob(t, ns, strings.Join(strings.Split(pod, "-")[:1], "-"))
	t.Fatalf("%s never logged %q", pod, re)
}

// elasticJob is the collective example under Paddle's elastic launcher:
// between minW and maxW workers rendezvousing in the local cluster's etcd,
// checkpointing every epoch to a volume they share, with a pause after each
// epoch so a test can disturb it mid-training.
func elasticJob(t *testing.T, name string, workers, minW, maxW int32) *paddlev1.PaddleJob {
	t.Helper()
	job := loadJob(t, "examples/jobs/resnet.yaml")
	job.Name = name
	job.Spec.Worker.Replicas = workers
	outputDir(t, job)
	job.Spec.ElasticPolicy = &paddlev1.ElasticPolicy{MinReplicas: &minW, MaxReplicas: &maxW, TimeoutSeconds: ptr.To[int32](10)}
	c := &job.Spec.Worker.Template.Spec.Containers[0]
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "EPOCHS", Value: "5"}, corev1.EnvVar{Name: "EPOCH_DELAY", Value: "3"},
		// Paddle's etcd client (etcd3 0.12) needs the pure-Python protobuf.
		corev1.EnvVar{Name: "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", Value: "python"})
	return job
}

// A worker killed mid-training (SIGKILL of its container's process, as the
// OOM killer does) is restarted under its restart policy (OnFailure, the
// default for elastic workers); Paddle's launcher restarts every worker's
// training, which resumes from the last checkpoint, and the job ends as well
// as an undisturbed run.
//
// The parameter-server example cannot do this: Paddle 3.0's trainers meet
// the servers at barriers when they start (GeoCommunicator::InitDense), and
// a trainer that starts again waits there for peers that passed long ago.
func TestKilledWorkerIsRestartedAndTheJobRecovers(t *testing.T) {
	_, logs := runReadingLogs(t, elasticJob(t, "calm", 2, 2, 2))
	want := parseCollective(t, "calm-worker-0", logs["calm-worker-0"])

	job := elasticJob(t, "killed", 2, 2, 2)
	job.Namespace = newNamespace(t)
	createJob(t, job)
	waitLog(t, job.Namespace, "killed-worker-0", regexp.MustCompile(`epoch 2/5: `))
	pid := launcherPID(t, "killed-worker-1")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed pid %d, the main process of killed-worker-1, after epoch 2", pid)
	got, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		dumpJob(t, job.Namespace, job.Name)
		t.Fatal(err)
	}
	mustComplete(t, got)
	logs = jobLogs(t, got)
	rep := checkCollectiveJob(t, got, logs)
	t.Logf("test accuracy %.3f after the kill, %.3f undisturbed; worker restarts %d", rep.Accuracy, want.Accuracy, got.Status.Worker.Restarts)
	if got.Status.Worker.Restarts != 1 {
		t.Errorf("the workers restarted %d times, want 1", got.Status.Worker.Restarts)
	}
	if !strings.Contains(logs["killed-worker-0"], "resumed after epoch") {
		t.Errorf("rank 0 did not resume from its checkpoint:\n%s", tail(logs["killed-worker-0"]))
	}
	if math.Abs(rep.Accuracy-want.Accuracy) > 0.05 {
		t.Errorf("test accuracy %.3f is more than 0.05 from the undisturbed %.3f", rep.Accuracy, want.Accuracy)
	}
}

// launcherPID finds the main process of a pod's container running Paddle's
// launcher on the local node.
func launcherPID(t *testing.T, pod string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		args := strings.Split(string(cmd), "\x00")
		// The sandbox's bwrap processes carry the same command line after
		// their own: the launcher is the python among them.
		if len(args) > 2 && strings.HasPrefix(filepath.Base(args[0]), "python") && slices.Contains(args, "paddle.distributed.launch") &&
			strings.Contains(string(env), "\x00HOSTNAME="+pod+"\x00") {
			return pid
		}
	}
	t.Fatalf("no launcher process for %s", pod)
	return 0
}

// Paddle-native elastic training: a job of 2 workers (at most 3) rendezvouses
// in the local cluster's etcd through Paddle's launcher; scaled to 3 while it
// trains, every worker restarts its training with the new world size,
// resumes from the shared checkpoint and the job completes.
func TestElasticJobScalesFrom2To3(t *testing.T) {
	job := elasticJob(t, "elastic", 2, 2, 3)
	job.Namespace = newNamespace(t)
	ctx := context.Background()
	createJob(t, job)
	waitLog(t, job.Namespace, "elastic-worker-0", regexp.MustCompile(`epoch 1/5: .* world_size=2`))
	if _, err := pj.Scale(ctx, job.Namespace, job.Name, paddlev1.ReplicaWorker, 3); err != nil {
		t.Fatal(err)
	}
	waitLog(t, job.Namespace, "elastic-worker-0", regexp.MustCompile(`epoch \d/5: .* world_size=3`))
	got, err := pj.WaitFor(ctx, job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		t.Fatal(err)
	}
	mustComplete(t, got)
	logs := jobLogs(t, got)
	rep := checkCollectiveJob(t, got, logs)
	if rep.WorldSize != 3 {
		t.Errorf("the job ended with world size %d, want 3", rep.WorldSize)
	}
	if !strings.Contains(logs["elastic-worker-0"], "resumed after epoch") {
		t.Errorf("rank 0 did not resume from its checkpoint after the scale-up:\n%s", tail(logs["elastic-worker-0"]))
	}
}

// Restarting the operator mid-job creates no duplicate pod, and the job
// completes.
func TestOperatorRestartMidJob(t *testing.T) {
	job := testutil.MakePaddleJob("steady", "").Workers(2).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sh", "-c", "echo started; sleep 8").Obj()
	job.Namespace = newNamespace(t)
	createJob(t, job)
	waitLog(t, job.Namespace, "steady-worker-0", regexp.MustCompile("started"))
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

// A 10 s deadline fails a job that would run for 10 minutes: with no other
// event to trigger it (the job would otherwise outlast the wait), not before
// the deadline, and its pods are stopped. How soon after the deadline is
// measured by test/integration's BenchmarkActiveDeadline.
func TestDeadlineFailsALongJob(t *testing.T) {
	job := testutil.MakePaddleJob("slow", "").Workers(2).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sleep", "600").Obj()
	job.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
	done := runToEnd(t, job)
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
	waitNoPods(t, done.Namespace, done.Name)
}
