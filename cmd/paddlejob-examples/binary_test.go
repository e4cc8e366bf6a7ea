package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// buildBinary builds paddlejob-examples into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "paddlejob-examples")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// pod is one process of a job, started with the environment contract.
type pod struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

func startPod(t *testing.T, ctx context.Context, bin, name string, env map[string]string, args ...string) *pod {
	t.Helper()
	p := &pod{name: name, cmd: exec.CommandContext(ctx, bin, args...)}
	p.cmd.Env = os.Environ()
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// freePort is a port nothing listens on at host.
func freePort(t *testing.T, host string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// waitAll waits for every pod and fails the test, with their logs, unless
// all exit 0.
func waitAll(t *testing.T, pods []*pod) {
	t.Helper()
	failed := false
	for _, p := range pods {
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("%s: %v", p.name, err)
			failed = true
		}
	}
	if failed {
		for _, p := range pods {
			t.Logf("--- %s stdout:\n%s--- %s stderr:\n%s", p.name, p.stdout.String(), p.name, p.stderr.String())
		}
		t.FailNow()
	}
}

// checkFinal checks rank 0's summary line and the checkpoints it names.
func checkFinal(t *testing.T, p *pod, out string, passes int) {
	t.Helper()
	m := finalLine.FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("%s printed no final line:\n%s", p.name, p.stdout.String())
	}
	t.Logf("%s: %s", p.name, m[0])
	testAUC, _ := strconv.ParseFloat(m[1], 64)
	optimal, _ := strconv.ParseFloat(m[2], 64)
	if testAUC < optimal-0.05 {
		t.Errorf("test AUC %.4f far below the optimum %.4f", testAUC, optimal)
	}
	if last := filepath.Join(out, fmt.Sprintf("pass-%05d", passes-1)); m[3] != strconv.Itoa(passes) || m[4] != last {
		t.Errorf("final line %q, want passes=%d model=%s", m[0], passes, last)
	}
	for pass := range passes {
		if _, err := os.Stat(filepath.Join(out, fmt.Sprintf("pass-%05d", pass), "done")); err != nil {
			t.Error(err)
		}
	}
}

func TestBinaryWideAndDeep(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "output")

	// Every pod has its own loopback address; pserver 1 goes by a name.
	psHosts := []string{"127.0.0.31", "localhost"}
	var pservers []string
	for _, h := range psHosts {
		pservers = append(pservers, h+":"+freePort(t, h))
	}
	trainerEndpoints := "127.0.0.41:6170,127.0.0.42:6170"
	job := map[string]string{
		"PADDLE_PSERVERS_IP_PORT_LIST": strings.Join(pservers, ","),
		"PADDLE_TRAINER_ENDPOINTS":     trainerEndpoints,
		"PADDLE_TRAINERS_NUM":          "2",
		"TRAINERS":                     "2",
		"PADDLE_OUTPUT_DIR":            out,
	}
	podEnv := func(role string, index int, endpoint string) map[string]string {
		env := map[string]string{
			"PADDLE_TRAINING_ROLE": role, "TRAINING_ROLE": role,
			"PADDLE_TRAINER_ID": strconv.Itoa(index), "TRAINER_ID": strconv.Itoa(index),
		}
		env["POD_IP"], env["PADDLE_PORT"], _ = strings.Cut(endpoint, ":")
		for k, v := range job {
			env[k] = v
		}
		return env
	}
	sizes := []string{"--rows=30000", "--test-rows=5000", "--passes=2"}
	var pods []*pod
	// Trainers first: they must wait for the pservers.
	for i, ep := range strings.Split(trainerEndpoints, ",") {
		pods = append(pods, startPod(t, ctx, bin, fmt.Sprintf("trainer-%d", i), podEnv("TRAINER", i, ep), append([]string{"wide-and-deep"}, sizes...)...))
	}
	time.Sleep(200 * time.Millisecond)
	for i, ep := range pservers {
		pods = append(pods, startPod(t, ctx, bin, fmt.Sprintf("ps-%d", i), podEnv("PSERVER", i, ep), "wide-and-deep"))
	}
	waitAll(t, pods)
	checkFinal(t, pods[0], out, 2)
	if pods[1].stdout.Len() != 0 {
		t.Errorf("trainer 1 printed %q", pods[1].stdout.String())
	}
	for _, p := range pods[2:] {
		if !strings.Contains(p.stderr.String(), "all 2 trainers done; exiting") {
			t.Errorf("%s did not log its exit:\n%s", p.name, p.stderr.String())
		}
	}
}

func TestBinaryCollective(t *testing.T) {
	bin := buildBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "output")
	var endpoints []string
	for i := range 3 {
		host := fmt.Sprintf("127.0.0.%d", 51+i)
		endpoints = append(endpoints, host+":"+freePort(t, host))
	}
	var pods []*pod
	for rank, ep := range endpoints {
		host, port, _ := strings.Cut(ep, ":")
		env := map[string]string{
			"PADDLE_TRAINER_ENDPOINTS": strings.Join(endpoints, ","), "PADDLE_CURRENT_ENDPOINT": ep,
			"PADDLE_TRAINERS_NUM": "3", "PADDLE_TRAINER_ID": strconv.Itoa(rank),
			"POD_IP": host, "PADDLE_PORT": port, "PADDLE_TRAINING_ROLE": "TRAINER",
		}
		pods = append(pods, startPod(t, ctx, bin, fmt.Sprintf("worker-%d", rank), env,
			"collective", "--output="+out, "--rows=30000", "--test-rows=5000", "--passes=2"))
	}
	waitAll(t, pods)
	checkFinal(t, pods[0], out, 2)
}
