package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// aucTolerance is how close to the optimum the examples must get.
const aucTolerance = 0.02

func TestPSExampleReachesItsAUC(t *testing.T) {
	job := loadJob(t, "examples/jobs/wide-and-deep.yaml")
	out := outputDir(t, job)
	done := runToEnd(t, job)
	mustComplete(t, done)

	res := parseResult(t, podLog(t, done.Namespace, "wide-and-deep-worker-0"))
	t.Logf("test AUC %.4f (optimum %.4f) after %d passes", res.AUC, res.OptimalAUC, res.Passes)
	if res.AUC < res.OptimalAUC-aucTolerance {
		t.Errorf("test AUC %.4f is more than %.2f below the optimum %.4f", res.AUC, aucTolerance, res.OptimalAUC)
	}
	for pass := 0; pass < res.Passes; pass++ {
		dir := filepath.Join(out, fmt.Sprintf("pass-%05d", pass))
		if _, err := os.Stat(filepath.Join(dir, "done")); err != nil {
			t.Errorf("checkpoint %s: %v", dir, err)
		}
	}
	// Every process logged its passes, and each pserver saw both trainers
	// finish, which is what ends it. (Its pod's phase cannot prove that: the
	// job completes with its workers, and the operator stops a pserver still
	// on its way out. The line is logged before the trainer's last call
	// returns, so it is there by the time the job completed.)
	for _, pod := range []string{"wide-and-deep-ps-0", "wide-and-deep-ps-1", "wide-and-deep-worker-1"} {
		log := podLog(t, done.Namespace, pod)
		if !strings.Contains(log, "pass") {
			t.Errorf("%s logged no pass:\n%s", pod, log)
		}
		if strings.Contains(pod, "-ps-") && !strings.Contains(log, "done; 2 of 2") {
			t.Errorf("%s did not see both trainers finish:\n%s", pod, log)
		}
	}
}

func TestCollectiveExampleReachesItsAUC(t *testing.T) {
	job := loadJob(t, "examples/jobs/resnet.yaml")
	outputDir(t, job)
	done := runToEnd(t, job)
	mustComplete(t, done)
	res := parseResult(t, podLog(t, done.Namespace, "resnet-worker-0"))
	t.Logf("test AUC %.4f (optimum %.4f)", res.AUC, res.OptimalAUC)
	if res.AUC < res.OptimalAUC-aucTolerance {
		t.Errorf("test AUC %.4f is more than %.2f below the optimum %.4f", res.AUC, aucTolerance, res.OptimalAUC)
	}
}

// Seed 004's example 1 runs exactly as written: only its image is mapped, by
// the node's image table.
func TestSeedExample1RunsAsWritten(t *testing.T) {
	done := runToEnd(t, loadJob(t, "config/samples/seed004/example-1-wide-and-deep.yaml"))
	mustComplete(t, done)
}

func TestWorkerExitCodeFailsTheJob(t *testing.T) {
	job := testutil.MakePaddleJob("fails", "").Workers(2).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sh", "-c", `if [ "$PADDLE_TRAINER_ID" = 1 ]; then exit 3; fi; sleep 600`).Obj()
	done := runToEnd(t, job)
	c := meta.FindStatusCondition(done.Status.Conditions, paddlev1.JobFailed)
	want := `pod fails-worker-1: container "paddle" exited with code 3 (Error)`
	if done.Status.Phase != paddlev1.PaddleJobFailed || c == nil || c.Message != want {
		t.Fatalf("job %s, Failed condition %+v; want message %q", done.Status.Phase, c, want)
	}
	// The other worker was still running: the finished job stops it; the
	// failed one stays for inspection (cleanPodPolicy defaults to Never).
	deadline := time.Now().Add(time.Minute)
	for {
		pods, err := pj.Pods(context.Background(), done.Namespace, done.Name)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) == 1 && pods[0].Name == "fails-worker-1" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods of the failed job a minute later: %d (want only the failed worker)", len(pods))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Each intranet runs a whole PS job; cleanPodPolicy Never keeps the pods,
// OnCompletion removes them.
func TestIntranetsAndCleanPodPolicy(t *testing.T) {
	tests := []struct {
		intranet paddlev1.Intranet
		policy   paddlev1.CleanPodPolicy
	}{
		{paddlev1.IntranetPodIP, paddlev1.CleanPodPolicyNever},
		{paddlev1.IntranetService, paddlev1.CleanPodPolicyOnCompletion},
		{paddlev1.IntranetHost, paddlev1.CleanPodPolicyOnCompletion},
	}
	for _, tc := range tests {
		t.Run(string(tc.intranet), func(t *testing.T) {
			job := loadJob(t, "examples/jobs/wide-and-deep.yaml")
			job.Name = "wd-" + strings.ToLower(string(tc.intranet))
			job.Spec.Intranet = tc.intranet
			job.Spec.CleanPodPolicy = tc.policy
			outputDir(t, job)
			withArgs(job, "--rows=20000", "--passes=2")
			done := runToEnd(t, job)
			mustComplete(t, done)

			pods, err := pj.Pods(context.Background(), done.Namespace, done.Name)
			if err != nil {
				t.Fatal(err)
			}
			live := 0
			for _, p := range pods {
				if p.DeletionTimestamp == nil {
					live++
				}
			}
			switch tc.policy {
			case paddlev1.CleanPodPolicyNever:
				if live != 4 {
					t.Errorf("cleanPodPolicy Never kept %d of 4 pods", live)
				}
			case paddlev1.CleanPodPolicyOnCompletion:
				waitNoPods(t, done.Namespace, done.Name)
			}
		})
	}
}

// kubectl logs reaches a worker's log through the API server and the node.
func TestKubectlLogs(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed for this test (it is installed on the project's machines): %v", err)
	}
	job := testutil.MakePaddleJob("hello", "").Workers(1).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sh", "-c", `echo "hello from $PADDLE_TRAINING_ROLE $PADDLE_TRAINER_ID"`).Obj()
	done := runToEnd(t, job)
	mustComplete(t, done)
	out, err := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig(), "-n", done.Namespace, "logs", "hello-worker-0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello from TRAINER 0") {
		t.Fatalf("kubectl logs: %v\n%s", err, out)
	}
}
