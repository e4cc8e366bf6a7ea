package launcher

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/paddlejob/paddlejob/internal/datasplit"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

// Seed 001's flow with real training: data generated and split into the
// shared volume by `paddlejob data split`, then two pods whose launchers run
// this repository's v1-flag pserver and trainer (paddlejob-examples
// pserver/train) on loopback pod IPs, each trainer reading its share from
// ./data. Pod 1's trainer ends first; its pserver must go on serving
// trainer 0, or trainer 0 fails with a lost connection.
func TestLaunchTrainsWithExamplePServerAndTrainer(t *testing.T) {
	_, cs := apiServer(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go tool to build paddlejob-examples")
	}
	bin := filepath.Join(t.TempDir(), "paddlejob-examples")
	build := exec.Command(goTool, "build", "-o", bin, "./cmd/paddlejob-examples")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building paddlejob-examples: %v\n%s", err, out)
	}

	ns := newNamespace(t, cs)
	const job = "ctr"
	createJob(t, cs, ns, job, 2)
	createJobPod(t, cs, ns, job, "ctr-a", "job-name", corev1.PodRunning, "127.0.0.12")
	createJobPod(t, cs, ns, job, "ctr-b", "job-name", corev1.PodRunning, "127.0.0.11")

	jobPath := t.TempDir()
	rows := filepath.Join(t.TempDir(), "train.txt")
	if out, err := exec.Command(bin, "gen-data", "--out", rows, "--rows", "20000").CombinedOutput(); err != nil {
		t.Fatalf("gen-data: %v\n%s", err, out)
	}
	sources, err := datasplit.FileSources([]string{rows}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := datasplit.Run(datasplit.Options{Sources: sources, OutDir: jobPath, Job: job, Parts: 2}); err != nil {
		t.Fatal(err)
	}

	ips := []string{"127.0.0.11", "127.0.0.12"}
	errs := make([]error, len(ips))
	logs := make([]*bytes.Buffer, len(ips))
	var wg sync.WaitGroup
	for i, ip := range ips {
		f := newLaunchFixture(t, ns, job)
		f.env["JOB_PATH"] = jobPath
		f.env["POD_IP"] = ip
		f.env["CONF_PADDLE_PORT"] = "17164"
		f.env["CONF_PADDLE_PORTS_NUM"] = "1"
		f.env["CONF_PADDLE_PORTS_NUM_SPARSE"] = "0"
		f.env["CONF_PADDLE_GRADIENT_NUM"] = "2"
		delete(f.env, "TRAIN_CONFIG_DIR")
		f.opts.PServerCmd = bin + " pserver"
		f.opts.TrainerCmd = bin + " train"
		f.opts.ExtraArgs = []string{"--local=0", "--passes=2", "--data=data/train.txt", "--test-rows=5000"}
		f.opts.Linger = time.Minute
		logs[i] = f.stderr
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Run(context.Background(), f.opts)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("launcher of %s: %v\n%s", ips[i], err, logs[i])
		}
	}
	output := filepath.Join(jobPath, job, "output")
	for _, node := range []string{"node_0", "node_1"} {
		got := readFile(t, filepath.Join(output, node, "train.log"))
		if !strings.Contains(got, "pass 2/2") || !strings.Contains(got, "over 10000 rows") {
			t.Errorf("%s's trainer did not train 2 passes over its 10000 rows of ./data:\n%s", node, got)
		}
	}
	for _, node := range []string{"node_0", "node_1"} {
		if got := readFile(t, filepath.Join(output, node, "server.log")); !strings.Contains(got, "all 2 trainers done") {
			t.Errorf("%s's pserver did not see both trainers finish:\n%s", node, got)
		}
		if got := readFile(t, filepath.Join(output, node, trainerExitFile)); got != "0\n" {
			t.Errorf("%s/%s = %q, want 0", node, trainerExitFile, got)
		}
	}
}
