package main

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

	"github.com/paddlejob/paddlejob/examples/collective/membershiptest"
)

// elasticJob is a collective job of binary processes that read their
// membership from a directory the test publishes to, as the operator does.
type elasticJob struct {
	t          *testing.T
	ctx        context.Context
	bin        string
	out        string
	membership string
	version    int
	args       []string
}

func newElasticJob(t *testing.T, ctx context.Context, bin string, args ...string) *elasticJob {
	dir := t.TempDir()
	return &elasticJob{
		t: t, ctx: ctx, bin: bin, out: filepath.Join(dir, "output"), membership: filepath.Join(dir, "paddlejob"),
		args: append([]string{"collective", "--rows=24000", "--test-rows=5000", "--passes=4"}, args...),
	}
}

func (j *elasticJob) publish(endpoints ...string) {
	j.t.Helper()
	j.version++
	if err := membershiptest.Publish(j.membership, strconv.Itoa(j.version), endpoints); err != nil {
		j.t.Fatal(err)
	}
}

// start runs worker index at endpoint with the environment of a pod created
// when the membership lists endpoints.
func (j *elasticJob) start(name string, index int, endpoints []string) *pod {
	j.t.Helper()
	host, port, _ := strings.Cut(endpoints[index], ":")
	env := map[string]string{
		"PADDLE_TRAINER_ENDPOINTS": strings.Join(endpoints, ","), "PADDLE_CURRENT_ENDPOINT": endpoints[index],
		"PADDLE_TRAINERS_NUM": strconv.Itoa(len(endpoints)), "PADDLE_TRAINER_ID": strconv.Itoa(index),
		"POD_IP": host, "PADDLE_PORT": port, "PADDLE_TRAINING_ROLE": "TRAINER",
		"PADDLE_OUTPUT_DIR": j.out, "PADDLEJOB_ENDPOINTS_DIR": j.membership,
	}
	return startPod(j.t, j.ctx, j.bin, name, env, j.args...)
}

// waitForCheckpoint waits until the checkpoint of pass is complete.
func (j *elasticJob) waitForCheckpoint(pass int) {
	j.t.Helper()
	done := filepath.Join(j.out, fmt.Sprintf("pass-%05d", pass), "done")
	for {
		if _, err := os.Stat(done); err == nil {
			return
		}
		select {
		case <-j.ctx.Done():
			j.t.Fatalf("no checkpoint of pass %d", pass+1)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// loopbackEndpoints is n endpoints on 127.0.0.<firstHost>, ... with free
// ports.
func loopbackEndpoints(t *testing.T, firstHost, n int) []string {
	var out []string
	for i := range n {
		host := fmt.Sprintf("127.0.0.%d", firstHost+i)
		out = append(out, host+":"+freePort(t, host))
	}
	return out
}

// testAUC is the test AUC of a final line.
func testAUC(t *testing.T, p *pod) float64 {
	t.Helper()
	m := finalLine.FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("%s printed no final line:\n%s", p.name, p.stdout.String())
	}
	auc, _ := strconv.ParseFloat(m[1], 64)
	return auc
}

func TestBinaryElasticWorkerIsKilledAndReplaced(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	undisturbed := newElasticJob(t, ctx, bin)
	endpoints := loopbackEndpoints(t, 71, 3)
	undisturbed.publish(endpoints...)
	var pods []*pod
	for i := range endpoints {
		pods = append(pods, undisturbed.start(fmt.Sprintf("undisturbed-%d", i), i, endpoints))
	}
	waitAll(t, pods)
	want := testAUC(t, pods[0])

	job := newElasticJob(t, ctx, bin, "--pass-delay=300ms")
	endpoints = loopbackEndpoints(t, 81, 3)
	job.publish(endpoints...)
	pods = nil
	for i := range endpoints {
		pods = append(pods, job.start(fmt.Sprintf("worker-%d", i), i, endpoints))
	}
	job.waitForCheckpoint(0)
	killed := pods[1]
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := killed.cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("worker 1 after SIGKILL: %v", err)
	}
	// Recreated under the same name: the same endpoint, and the
	// membership files do not change.
	pods[1] = job.start("worker-1-again", 1, endpoints)
	waitAll(t, pods)
	checkFinal(t, pods[0], job.out, 4)
	got := testAUC(t, pods[0])
	if math.Abs(got-want) > 0.01 {
		t.Errorf("test AUC %.4f after the kill, %.4f undisturbed: more than 0.01 apart", got, want)
	}
	for _, p := range pods[1:] {
		if p.stdout.Len() != 0 {
			t.Errorf("%s printed %q", p.name, p.stdout.String())
		}
	}
	if log := pods[1].stderr.String(); !strings.Contains(log, "epoch 2: rank 1 of 3") {
		t.Errorf("the replacement did not train as rank 1 of epoch 2:\n%s", log)
	}
}

func TestBinaryElasticScaleDownBySignal(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job := newElasticJob(t, ctx, bin, "--pass-delay=300ms")
	endpoints := loopbackEndpoints(t, 91, 2)
	job.publish(endpoints...)
	pods := []*pod{job.start("worker-0", 0, endpoints), job.start("worker-1", 1, endpoints)}
	job.waitForCheckpoint(0)

	// The operator shrinks the lists and deletes the pod.
	job.publish(endpoints[0])
	if err := pods[1].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	waitAll(t, pods[1:])
	if took := time.Since(stopped); took > 5*time.Second {
		t.Errorf("worker 1 took %s to leave after SIGTERM", took)
	}
	if log := pods[1].stderr.String(); !strings.Contains(log, "leaving") {
		t.Errorf("worker 1 did not say it leaves:\n%s", log)
	}
	waitAll(t, pods[:1])
	checkFinal(t, pods[0], job.out, 4)
	if log := pods[0].stderr.String(); !strings.Contains(log, "rank 0 of 1") {
		t.Errorf("worker 0 did not go on alone:\n%s", log)
	}
}
