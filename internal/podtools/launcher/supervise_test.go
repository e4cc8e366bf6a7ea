package launcher

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// script is an argv that runs a shell script with "role" as $0.
func script(role, body string) []string { return []string{"sh", "-c", body, role} }

type supervisorRun struct {
	s      *supervisor
	dir    string
	stdout *bytes.Buffer
	stderr *bytes.Buffer
}

// newSupervisorRun prepares a pserver (unless pserverBody is empty) and a
// trainer running the given scripts in a temporary directory.
func newSupervisorRun(t *testing.T, pserverBody, trainerBody string) *supervisorRun {
	t.Helper()
	dir := t.TempDir()
	r := &supervisorRun{dir: dir, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	out, errw := &syncWriter{w: r.stdout}, &syncWriter{w: r.stderr}
	spec := func(role, body, logName string) processSpec {
		return processSpec{role: role, argv: script(role, body), dir: dir, env: os.Environ(),
			logPath: filepath.Join(dir, logName), output: out}
	}
	r.s = &supervisor{trainer: spec("trainer", trainerBody, "train.log"), grace: 5 * time.Second, log: errw,
		linger: time.Minute, pollInterval: 50 * time.Millisecond, othersDone: func() bool { return false }}
	if pserverBody != "" {
		ps := spec("pserver", pserverBody, "server.log")
		r.s.pserver = &ps
	}
	return r
}

func (r *supervisorRun) run(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	err := r.s.run(ctx)
	return time.Since(start), err
}

func exitCodeOf(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("error %v is not an *ExitError", err)
	}
	return exit.Code
}

// alive reports whether the process whose pid a script wrote to file runs.
func alive(t *testing.T, file string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("reading the pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return syscall.Kill(pid, 0) == nil
}

func TestSupervisorTrainerExitStopsPServer(t *testing.T) {
	r := newSupervisorRun(t,
		`echo $$ > pserver.pid; echo "pserver up"; echo "pserver warning" >&2; exec sleep 60`,
		`echo "training"; echo "oops" >&2; exit 3`)
	r.s.trainerDelay = 200 * time.Millisecond // the pid file is written by then
	took, err := r.run(context.Background())
	if code := exitCodeOf(t, err); code != 3 {
		t.Fatalf("exit code = %d (%v), want 3", code, err)
	}
	if took > 3*time.Second {
		t.Errorf("took %s: the pserver was not stopped promptly", took)
	}
	if alive(t, filepath.Join(r.dir, "pserver.pid")) {
		t.Error("the pserver still runs after the trainer exited")
	}
	if got, want := readFile(t, filepath.Join(r.dir, "train.log")), "training\noops\n"; got != want {
		t.Errorf("train.log = %q, want %q", got, want)
	}
	if got, want := readFile(t, filepath.Join(r.dir, "server.log")), "pserver up\npserver warning\n"; got != want {
		t.Errorf("server.log = %q, want %q", got, want)
	}
	for _, want := range []string{"[pserver] pserver up\n[pserver] pserver warning\n", "[trainer] training\n[trainer] oops\n"} {
		if !strings.Contains(r.stdout.String(), want) {
			t.Errorf("stdout %q lacks %q", r.stdout.String(), want)
		}
	}
}

// A failed trainer stops its pserver at once (the test's linger is a
// minute and the other trainers never finish); a successful one leaves it
// serving the other pods' trainers until they are done.
func TestSupervisorPServerServesOtherTrainers(t *testing.T) {
	r := newSupervisorRun(t, `echo $$ > pserver.pid; exec sleep 60`, `exit 0`)
	r.s.trainerDelay = 200 * time.Millisecond
	var othersDone atomic.Bool
	r.s.othersDone = othersDone.Load
	var ended []int
	r.s.trainerEnded = func(code int) { ended = append(ended, code) }
	go func() {
		time.Sleep(time.Second)
		othersDone.Store(true)
	}()
	took, err := r.run(context.Background())
	if err != nil {
		t.Fatalf("run() = %v, want nil", err)
	}
	if took < time.Second || took > 5*time.Second {
		t.Errorf("took %s; want the pserver kept until the others were done (1s), then stopped", took)
	}
	if alive(t, filepath.Join(r.dir, "pserver.pid")) {
		t.Error("the pserver still runs")
	}
	if !reflect.DeepEqual(ended, []int{0}) {
		t.Errorf("trainerEnded got %v, want [0]", ended)
	}
}

func TestSupervisorLingerIsBounded(t *testing.T) {
	r := newSupervisorRun(t, `exec sleep 60`, `exit 0`)
	r.s.linger = 500 * time.Millisecond
	took, err := r.run(context.Background())
	if err != nil {
		t.Fatalf("run() = %v, want nil", err)
	}
	if took < 500*time.Millisecond || took > 5*time.Second {
		t.Errorf("took %s with a linger of %s", took, r.s.linger)
	}
	if !strings.Contains(r.stderr.String(), "other trainers still running after 500ms; stopping the pserver") {
		t.Errorf("stderr %q does not say why the pserver stopped", r.stderr)
	}
}

// A pserver that exits by itself once all trainers are done (as the
// examples' pservers do) ends the linger.
func TestSupervisorLingerEndsWithPServer(t *testing.T) {
	r := newSupervisorRun(t, `sleep 1; exit 0`, `exit 0`)
	took, err := r.run(context.Background())
	if err != nil || took > 5*time.Second {
		t.Fatalf("run() = %v after %s", err, took)
	}
}

// A pserver that never exits and ignores SIGTERM (as a Paddle pserver may
// while busy) neither keeps the pod alive nor fails it: once the trainer
// succeeded and the others are done it is killed after the grace period,
// and the trainer's exit code stands.
func TestSupervisorStopsPServerThatNeverExits(t *testing.T) {
	r := newSupervisorRun(t, `trap '' TERM; echo $$ > pserver.pid; while :; do sleep 1; done`, `exit 0`)
	r.s.trainerDelay = 200 * time.Millisecond
	r.s.grace = 300 * time.Millisecond
	r.s.othersDone = func() bool { return true }
	took, err := r.run(context.Background())
	if err != nil {
		t.Fatalf("run() = %v, want nil: the trainer succeeded", err)
	}
	if took > 5*time.Second {
		t.Errorf("took %s with a grace period of %s", took, r.s.grace)
	}
	if alive(t, filepath.Join(r.dir, "pserver.pid")) {
		t.Error("the pserver still runs")
	}
	if !strings.Contains(r.stderr.String(), "all trainers are done; stopping the pserver") {
		t.Errorf("stderr %q does not say why the pserver stopped", r.stderr)
	}
}

func TestSupervisorPServerFailureStopsTrainer(t *testing.T) {
	r := newSupervisorRun(t, `sleep 0.3; exit 7`, `echo $$ > trainer.pid; exec sleep 60`)
	took, err := r.run(context.Background())
	if code := exitCodeOf(t, err); code != 7 {
		t.Fatalf("exit code = %d (%v), want 7", code, err)
	}
	if !strings.Contains(err.Error(), "pserver exited with code 7 before the trainer finished") {
		t.Errorf("error %q does not name the pserver's exit code", err)
	}
	if took > 3*time.Second || alive(t, filepath.Join(r.dir, "trainer.pid")) {
		t.Errorf("the trainer was not stopped (took %s)", took)
	}
}

func TestSupervisorPServerSuccessLetsTrainerFinish(t *testing.T) {
	r := newSupervisorRun(t, `exit 0`, `sleep 0.3; exit 0`)
	if _, err := r.run(context.Background()); err != nil {
		t.Fatalf("run() = %v, want nil", err)
	}
	if !strings.Contains(r.stderr.String(), "the pserver exited with code 0; the trainer goes on") {
		t.Errorf("no note in %q", r.stderr.String())
	}
}

func TestSupervisorForwardsSignals(t *testing.T) {
	r := newSupervisorRun(t,
		`trap 'echo "pserver got TERM"; exit 0' TERM; echo ready > pserver.ready; sleep 60 & wait`,
		`trap 'echo "trainer got TERM"; exit 42' TERM; echo ready > trainer.ready; sleep 60 & wait`)
	signals := make(chan os.Signal, 1)
	r.s.signals = signals
	go func() {
		waitForFile(t, filepath.Join(r.dir, "pserver.ready"))
		waitForFile(t, filepath.Join(r.dir, "trainer.ready"))
		signals <- syscall.SIGTERM
	}()
	_, err := r.run(context.Background())
	if code := exitCodeOf(t, err); code != 42 {
		t.Fatalf("exit code = %d (%v), want the trainer's 42", code, err)
	}
	if got := readFile(t, filepath.Join(r.dir, "server.log")); got != "pserver got TERM\n" {
		t.Errorf("server.log = %q: the pserver did not get SIGTERM", got)
	}
	if got := readFile(t, filepath.Join(r.dir, "train.log")); got != "trainer got TERM\n" {
		t.Errorf("train.log = %q: the trainer did not get SIGTERM", got)
	}
}

func TestSupervisorKillsAfterGrace(t *testing.T) {
	r := newSupervisorRun(t, "", `trap '' TERM INT; echo ready > trainer.ready; sleep 60 & wait; sleep 60`)
	r.s.grace = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitForFile(t, filepath.Join(r.dir, "trainer.ready"))
		cancel() // as a SIGTERM to paddlejob does through the root command
	}()
	took, err := r.run(ctx)
	if code := exitCodeOf(t, err); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit code = %d (%v), want %d", code, err, 128+int(syscall.SIGKILL))
	}
	if took > 5*time.Second {
		t.Errorf("took %s with a grace period of %s", took, r.s.grace)
	}
}

func TestSupervisorInterruptedBeforeTrainerStarts(t *testing.T) {
	r := newSupervisorRun(t, `echo ready > pserver.ready; exec sleep 60`, `echo "must not run" > trainer.ran`)
	r.s.trainerDelay = time.Minute
	signals := make(chan os.Signal, 1)
	r.s.signals = signals
	go func() {
		waitForFile(t, filepath.Join(r.dir, "pserver.ready"))
		signals <- syscall.SIGINT
	}()
	took, err := r.run(context.Background())
	if code := exitCodeOf(t, err); code != 128+int(syscall.SIGINT) {
		t.Fatalf("exit code = %d (%v), want %d", code, err, 128+int(syscall.SIGINT))
	}
	if took > 5*time.Second {
		t.Errorf("took %s", took)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "trainer.ran")); !os.IsNotExist(err) {
		t.Error("the trainer started after the signal")
	}
}

func TestSupervisorTrainerCannotStart(t *testing.T) {
	r := newSupervisorRun(t, `echo $$ > pserver.pid; exec sleep 60`, `true`)
	r.s.trainer.argv = []string{filepath.Join(r.dir, "no-such-trainer")}
	r.s.trainerDelay = 200 * time.Millisecond
	_, err := r.run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "starting the trainer") {
		t.Fatalf("run() = %v, want an error starting the trainer", err)
	}
	if alive(t, filepath.Join(r.dir, "pserver.pid")) {
		t.Error("the pserver still runs")
	}
}

func waitForFile(t *testing.T, path string) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Errorf("%s did not appear", path)
}
