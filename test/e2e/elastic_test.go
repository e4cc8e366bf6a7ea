package e2e

import (
	"context"
	"fmt"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// Elastic training with real Paddle: Paddle's launcher rendezvouses the
// workers in etcd and ranks the live ones itself (no worker has a fixed
// rank), so which pod is rank 0 — the one that reports the epochs and the
// result — can change with every restart of training. The tests read what
// Paddle reports from whichever pod reports it.

// accuracyTolerance is how far a disturbed elastic run's test accuracy may
// be from an undisturbed one's.
const accuracyTolerance = 0.05

// elasticJob is the collective example under Paddle's elastic launcher:
// between minW and maxW workers rendezvousing in the local cluster's etcd,
// checkpointing every epoch to a volume they share (its host directory is
// returned), with a pause after each epoch so a test can disturb it
// mid-training.
func elasticJob(t *testing.T, name string, workers, minW, maxW, epochs int32) (*paddlev1.PaddleJob, string) {
	t.Helper()
	job := loadJob(t, "examples/jobs/resnet.yaml")
	job.Name = name
	job.Spec.Worker.Replicas = workers
	dir := outputDir(t, job)
	job.Spec.ElasticPolicy = &paddlev1.ElasticPolicy{MinReplicas: &minW, MaxReplicas: &maxW, TimeoutSeconds: ptr.To[int32](10)}
	c := &job.Spec.Worker.Template.Spec.Containers[0]
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "EPOCHS", Value: strconv.Itoa(int(epochs))}, corev1.EnvVar{Name: "EPOCH_DELAY", Value: "3"},
		// Paddle's etcd client (etcd3 0.12) needs the pure-Python protobuf.
		corev1.EnvVar{Name: "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", Value: "python"})
	return job, dir
}

// elasticLogs are the logs of the current containers of the job's pods —
// those that exist now, as a scaled job's differ from its spec's at creation.
func elasticLogs(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) map[string]string {
	t.Helper()
	pods, err := pj.Pods(context.Background(), job.Namespace, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods {
		if r, err := pj.Logs(context.Background(), job.Namespace, p.Name, client.LogOptions{}); err == nil {
			b, _ := io.ReadAll(r)
			r.Close()
			out[p.Name] = string(b)
		}
	}
	return out
}

// epochLines are the epoch reports (rank 0's) in the job's pods' current
// logs. Each carries its time since training started, so a report of a
// later run of training never equals an earlier one.
func epochLines(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, log := range elasticLogs(t, pj, job) {
		for _, line := range regexp.MustCompile(`(?m)^epoch \d+/\d+: .*$`).FindAllString(log, -1) {
			out[line] = true
		}
	}
	return out
}

// waitEpoch waits until a pod of the job reports an epoch, at least
// minEpoch, trained with the given world size, other than the reports in
// seen, and returns it.
func waitEpoch(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob, seen map[string]bool, worldSize, minEpoch int) epochReport {
	t.Helper()
	var rep epochReport
	if _, ok := waitFor(jobTimeout, func() (bool, string) {
		for line := range epochLines(t, pj, job) {
			if m := epochLine.FindStringSubmatch(line); m != nil && !seen[line] && atoi(m[5]) == worldSize && atoi(m[1]) >= minEpoch {
				t.Logf("Paddle reports %q", line)
				rep = epochReport{Epoch: atoi(m[1]), Of: atoi(m[2]), Loss: atof(m[3]), Accuracy: atof(m[4]), WorldSize: atoi(m[5])}
				return true, ""
			}
		}
		return false, ""
	}); ok {
		return rep
	}
	dumpJob(t, pj, job.Namespace, job.Name)
	for pod, log := range elasticLogs(t, pj, job) {
		t.Logf("whole log of %s:\n%s", pod, tail(log))
	}
	t.Fatalf("no pod of %s reported an epoch (from %d) trained by %d workers", job.Name, minEpoch, worldSize)
	return epochReport{}
}

// checkElasticJob asserts what the ranks of a completed elastic ResNet job
// reported through Paddle in their last run of training: ranks 0..n-1, each
// with world size n, and rank 0's falling loss; it returns rank 0's report.
func checkElasticJob(t *testing.T, job *paddlev1.PaddleJob, logs map[string]string, n int) collectiveReport {
	t.Helper()
	ranks := ranksReported(t, logs)
	for rank := 0; rank < n; rank++ {
		if ranks[rank] != n {
			t.Errorf("rank %d reported world size %d, want %d (ranks: %v)", rank, ranks[rank], n, ranks)
		}
	}
	if len(ranks) != n {
		t.Errorf("ranks reported: %v, want 0..%d", ranks, n-1)
	}
	var pods []string
	for pod, log := range logs {
		if collectiveFinal.MatchString(log) {
			pods = append(pods, pod)
		}
	}
	if len(pods) != 1 {
		t.Fatalf("the final result was reported by %v, want one pod (rank 0)", pods)
	}
	rep := parseCollective(t, pods[0], logs[pods[0]])
	if len(rep.Epochs) == 0 || rep.FinalLoss >= rep.Epochs[0].Loss {
		t.Errorf("the loss did not fall: epochs %+v, final %.4f", rep.Epochs, rep.FinalLoss)
	}
	t.Logf("rank 0 on %s: world size %d, loss %.4f, test accuracy %.3f", pods[0], rep.WorldSize, rep.FinalLoss, rep.Accuracy)
	return rep
}

// runElasticUndisturbed runs an elastic job to completion and returns what
// its rank 0 reported.
func runElasticUndisturbed(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) collectiveReport {
	t.Helper()
	done := runToEnd(t, pj, job)
	mustComplete(t, pj, done)
	return checkElasticJob(t, done, elasticLogs(t, pj, done), int(job.Spec.Worker.Replicas))
}

// A worker killed mid-training (SIGKILL of its container's process, as the
// OOM killer does) is restarted under its restart policy (OnFailure, the
// default for elastic workers); Paddle's launcher restarts every worker's
// training, which resumes from the last checkpoint, and the job ends as well
// as an undisturbed run.
//
// A parameter-server job cannot recover one pod at a time: Paddle 3.0's
// trainers meet the servers at barriers when they start
// (GeoCommunicator::InitDense), and a trainer that starts again waits there
// for peers that passed long ago. It restarts as a whole instead
// (recovery_test.go).
func TestKilledWorkerIsRestartedAndTheJobRecovers(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	calm, _ := elasticJob(t, "calm", 2, 2, 2, 5)
	want := runElasticUndisturbed(t, pj, calm)

	job, _ := elasticJob(t, "killed", 2, 2, 2, 5)
	job.Namespace = newNamespace(t, pj)
	createJob(t, pj, job)
	waitEpoch(t, pj, job, nil, 2, 2)
	seen := epochLines(t, pj, job)
	pid := launcherPID(t, "killed-worker-1")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed pid %d, the main process of killed-worker-1", pid)
	waitEpoch(t, pj, job, seen, 2, 0)
	got, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		dumpJob(t, pj, job.Namespace, job.Name)
		t.Fatal(err)
	}
	mustComplete(t, pj, got)
	logs := elasticLogs(t, pj, got)
	rep := checkElasticJob(t, got, logs, 2)
	t.Logf("test accuracy %.3f after the kill, %.3f undisturbed; worker restarts %d", rep.Accuracy, want.Accuracy, got.Status.Worker.Restarts)
	if n := containerRestarts(t, pj, got.Namespace, "killed-worker-1"); n < 1 {
		t.Errorf("killed-worker-1's container restarted %d times, want at least once", n)
	}
	if !anyLogContains(logs, "resumed after epoch") {
		t.Errorf("no rank resumed from the checkpoint after the kill")
	}
	if math.Abs(rep.Accuracy-want.Accuracy) > accuracyTolerance {
		t.Errorf("test accuracy %.3f is more than %.2f from the undisturbed %.3f", rep.Accuracy, accuracyTolerance, want.Accuracy)
	}
}

// Paddle-native elastic training: a job of 2 workers (at most 3) rendezvouses
// in the local cluster's etcd through Paddle's launcher; scaled to 3 while it
// trains, every worker restarts its training with the new world size,
// resumes from the shared checkpoint and the job completes.
func TestElasticJobScalesFrom2To3(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	job, _ := elasticJob(t, "elastic", 2, 2, 3, 5)
	job.Namespace = newNamespace(t, pj)
	ctx := context.Background()
	createJob(t, pj, job)
	waitEpoch(t, pj, job, nil, 2, 1)
	seen := epochLines(t, pj, job)
	if _, err := pj.Scale(ctx, job.Namespace, job.Name, paddlev1.ReplicaWorker, 3); err != nil {
		t.Fatal(err)
	}
	waitEpoch(t, pj, job, seen, 3, 0)
	got, err := pj.WaitFor(ctx, job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		t.Fatal(err)
	}
	mustComplete(t, pj, got)
	logs := elasticLogs(t, pj, got)
	rep := checkElasticJob(t, got, logs, 3)
	if rep.WorldSize != 3 {
		t.Errorf("the job ended with world size %d, want 3", rep.WorldSize)
	}
	if !anyLogContains(logs, "resumed after epoch") {
		t.Errorf("no rank resumed from the checkpoint after the scale-up")
	}
}

// An elastic job of 3 workers (at least 2) forms the first time,
// -first-run.repeat times in a row: each completes without a restart of the job, its last training
// run reported by ranks 0, 1 and 2 with world size 3, and the loss fell.
// Paddle's launcher may still restart every worker's training once when a
// worker starts late (its level 1 does that on every membership change);
// what used to stall formation until the progress deadline was Paddle
// creating Gloo groups one after another, which the ResNet example no
// longer does (docs/paddle-known-issues.md): no rank may be refused by
// Gloo.
func TestElasticJobFormsTheFirstTime(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	runs := *firstRunRepeat
	for i := range runs {
		job, _ := elasticJob(t, fmt.Sprintf("form-%d", i), 3, 2, 3, 3)
		setEnv(&job.Spec.Worker.Template.Spec.Containers[0], "EPOCH_DELAY", "0")
		done := runToEnd(t, pj, job)
		mustComplete(t, pj, done)
		logs := elasticLogs(t, pj, done)
		rep := checkElasticJob(t, done, logs, 3)
		t.Logf("run %d of %d: restartCount %d, worker restarts %d, world size %d", i+1, runs,
			done.Status.RestartCount, done.Status.Worker.Restarts, rep.WorldSize)
		if done.Status.RestartCount != 0 {
			t.Errorf("run %d: PaddleJob %s restarted %d times, want 0", i+1, done.Name, done.Status.RestartCount)
		}
		if anyLogContains(logs, "Connection refused") {
			t.Errorf("run %d: a rank of %s was refused by a peer (Gloo's rendezvous)", i+1, done.Name)
		}
	}
}

// setEnv gives a container's variable a value, replacing the one it has.
func setEnv(c *corev1.Container, name, value string) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i].Value = value
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

// A 3-worker job (at least 2) loses worker 1 mid-training, and worker 1
// stays away for a while: its container is restarted (OnFailure) but holds
// before it starts Paddle's launcher until the test releases it, through a
// file on the job's shared volume. Paddle's launcher carries on with the two
// workers left — ranked 0 and 1 by the launcher, whatever their pod
// indices — from the last checkpoint; once worker 1 is let back, it rejoins,
// the job completes, and it learned as well as an undisturbed run.
//
// The job reaches etcd by a name beginning with "etcd" (a host alias of
// the host IP, where the local cluster forwards its elastic etcd guard), the
// form Paddle's launcher would cut to ".paddle" were it passed as it is.
func TestElasticJobSurvivesTheLossOfAWorker(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	const epochs = 8
	withEtcdName := func(job *paddlev1.PaddleJob) {
		job.Spec.ElasticPolicy.EtcdEndpoints = []string{fmt.Sprintf("http://etcd.paddle:%d", cluster.Ports.ElasticEtcd)}
		job.Spec.Worker.Template.Spec.HostAliases = []corev1.HostAlias{{IP: cluster.HostIP(), Hostnames: []string{"etcd.paddle"}}}
	}
	calm, _ := elasticJob(t, "calm3", 3, 2, 3, epochs)
	withEtcdName(calm)
	want := runElasticUndisturbed(t, pj, calm)

	job, dir := elasticJob(t, "loss", 3, 2, 3, epochs)
	withEtcdName(job)
	// The hold: a worker whose file is on the volume waits before it starts
	// Paddle's launcher. No file is there when the job starts.
	c := &job.Spec.Worker.Template.Spec.Containers[0]
	c.Command = []string{"sh", "-c", `while [ -e "/output/$HOSTNAME.hold" ]; do sleep 1; done; exec python -m paddle.distributed.launch train_fleet.py`}
	c.Args = nil
	job.Namespace = newNamespace(t, pj)
	start := time.Now()
	createJob(t, pj, job)

	before := waitEpoch(t, pj, job, nil, 3, 2)
	hold := filepath.Join(dir, "loss-worker-1.hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	seen := epochLines(t, pj, job)
	pid := launcherPID(t, "loss-worker-1")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed pid %d, the launcher of loss-worker-1, after epoch %d of 3 workers; holding it back", pid, before.Epoch)

	during := waitEpoch(t, pj, job, seen, 2, 0)
	waitHeld(t, pj, job.Namespace, "loss-worker-1")
	seen = epochLines(t, pj, job)
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	t.Logf("Paddle trained epoch %d on 2 workers while loss-worker-1 was held; released it", during.Epoch)
	after := waitEpoch(t, pj, job, seen, 3, 0)
	t.Logf("loss-worker-1 rejoined: epoch %d trained by 3 workers", after.Epoch)

	got, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		dumpJob(t, pj, job.Namespace, job.Name)
		t.Fatal(err)
	}
	mustComplete(t, pj, got)
	logs := elasticLogs(t, pj, got)
	rep := checkElasticJob(t, got, logs, 3)
	t.Logf("PaddleJob %s completed in %s; test accuracy %.3f, undisturbed %.3f; restartCount %d, worker restarts %d",
		job.Name, time.Since(start).Round(time.Second), rep.Accuracy, want.Accuracy, got.Status.RestartCount, got.Status.Worker.Restarts)
	if !anyLogContains(logs, "resumed after epoch") {
		t.Errorf("no rank resumed from the checkpoint")
	}
	if math.Abs(rep.Accuracy-want.Accuracy) > accuracyTolerance {
		t.Errorf("test accuracy %.3f is more than %.2f from the undisturbed %.3f", rep.Accuracy, accuracyTolerance, want.Accuracy)
	}
}

// waitHeld waits until a pod's container has been restarted and is
// running, held: its Paddle launcher not started.
func waitHeld(t *testing.T, pj *client.Client, ns, pod string) {
	t.Helper()
	poll(t, time.Minute, pod+" restarted and running, held", func() (bool, string) {
		p, err := pj.Clientset().CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		n := containerRestarts(t, pj, ns, pod)
		return n >= 1 && p.Status.Phase == corev1.PodRunning && started(p), fmt.Sprintf("container restarted %d times, %s", n, statusLine(p))
	})
	if launcherRunning(pod) {
		t.Fatalf("%s started Paddle's launcher while held", pod)
	}
}

// containerRestarts is how many times a pod's first container restarted.
func containerRestarts(t *testing.T, pj *client.Client, ns, pod string) int32 {
	t.Helper()
	p, err := pj.Clientset().CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == p.Spec.Containers[0].Name {
			return cs.RestartCount
		}
	}
	return 0
}

func anyLogContains(logs map[string]string, s string) bool {
	for _, log := range logs {
		if strings.Contains(log, s) {
			return true
		}
	}
	return false
}

// launcherPID finds the main process of a pod's container running Paddle's
// launcher on the local node.
func launcherPID(t *testing.T, pod string) int {
	t.Helper()
	if pid := findLauncher(pod); pid != 0 {
		return pid
	}
	t.Fatalf("no launcher process for %s", pod)
	return 0
}

func launcherRunning(pod string) bool { return findLauncher(pod) != 0 }

// findLauncher is the pid of a pod's Paddle launcher, 0 when none runs.
func findLauncher(pod string) int {
	return findPodPython(pod, func(args []string) bool { return slices.Contains(args, "paddle.distributed.launch") })
}
