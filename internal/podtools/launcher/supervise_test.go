package launcher

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// script is an argv that runs a shell script with "role" as $0.
func script(role, body string) []string { return []string{"sh", "-c", body, role} }

// waitFor is a shell loop that waits until a file exists. The scripts of
// these tests order their steps on files rather than on sleeps.
func waitFor(file string) string {
	return "until [ -e " + file + " ]; do sleep 0.01; done; "
}

// waitForLaunchLog is a shell loop that waits until the supervisor's log,
// which the tests also write to launch.log, says what.
func waitForLaunchLog(what string) string {
	return "until grep -q '" + what + "' launch.log 2>/dev/null; do sleep 0.01; done; "
}

// stoppedPServer is a pserver that records the SIGTERM that stops it in
// pserver.term, so a test tells a pserver the supervisor stopped from one it
// waited out; it writes pserver.ready once it has its trap.
const stoppedPServer = `trap 'echo TERM > pserver.term; exit 0' TERM; echo $$ > pserver.pid; echo > pserver.ready; sleep 60 & wait`

// runBound only catches a supervisor that never returns (a child it fails
// to stop); every run here takes well under a second.
const runBound = time.Minute

type supervisorRun struct {
	t      *testing.T
	s      *supervisor
	dir    string
	stdout *bytes.Buffer
	stderr *bytes.Buffer
}

// newSupervisorRun prepares a pserver (unless pserverBody is empty) and a
// trainer running the given scripts in a temporary directory. The
// supervisor's log goes to stderr and to launch.log, which scripts may read.
func newSupervisorRun(t *testing.T, pserverBody, trainerBody string) *supervisorRun {
	t.Helper()
	dir := t.TempDir()
	r := &supervisorRun{t: t, dir: dir, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	launchLog, err := os.Create(filepath.Join(dir, "launch.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { launchLog.Close() })
	out, errw := &syncWriter{w: r.stdout}, &syncWriter{w: io.MultiWriter(r.stderr, launchLog)}
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

// run runs the supervisor and returns how long it took, failing the test if
// it does not return within runBound.
func (r *supervisorRun) run(ctx context.Context) (time.Duration, error) {
	r.t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- r.s.run(ctx) }()
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(runBound):
		r.t.Fatalf("the supervisor has not returned after %s: a child it should have stopped still runs\nstderr: %s", runBound, r.stderr)
		return 0, nil
	}
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

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func TestSupervisorTrainerExitStopsPServer(t *testing.T) {
	r := newSupervisorRun(t,
		`trap 'echo TERM > pserver.term; exit 0' TERM; echo $$ > pserver.pid; echo "pserver up"; echo "pserver warning" >&2; echo > pserver.ready; sleep 60 & wait`,
		// The trainer starts once the pserver's output is in its log, so
		// that the two do not interleave.
		`until grep -q "pserver warning" server.log 2>/dev/null; do sleep 0.01; done; echo "training"; echo "oops" >&2; exit 3`)
	_, err := r.run(context.Background())
	if code := exitCodeOf(t, err); code != 3 {
		t.Fatalf("exit code = %d (%v), want 3", code, err)
	}
	if !exists(filepath.Join(r.dir, "pserver.term")) {
		t.Error("the pserver got no SIGTERM when the trainer failed")
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
	r := newSupervisorRun(t, stoppedPServer, waitFor("pserver.ready")+`exit 0`)
	// The other trainers are done at the fourth look; until then the
	// pserver must run untouched.
	polls, stoppedEarly := 0, false
	r.s.othersDone = func() bool {
		polls++
		if exists(filepath.Join(r.dir, "pserver.term")) {
			stoppedEarly = true
		}
		return polls == 4
	}
	var ended []int
	r.s.trainerEnded = func(code int) { ended = append(ended, code) }
	if _, err := r.run(context.Background()); err != nil {
		t.Fatalf("run() = %v, want nil", err)
	}
	if stoppedEarly || polls != 4 {
		t.Errorf("the pserver was stopped after %d looks at the other trainers (stopped while they ran: %v), want after the 4th", polls, stoppedEarly)
	}
	if !exists(filepath.Join(r.dir, "pserver.term")) {
		t.Error("the pserver got no SIGTERM once the other trainers were done")
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
	// A lower bound only: the pserver is kept for the whole linger.
	if took < r.s.linger {
		t.Errorf("took %s with a linger of %s", took, r.s.linger)
	}
	if !strings.Contains(r.stderr.String(), "other trainers still running after 500ms; stopping the pserver") {
		t.Errorf("stderr %q does not say why the pserver stopped", r.stderr)
	}
}

// A pserver that exits by itself once all trainers are done (as the
// examples' pservers do) ends the linger.
func TestSupervisorLingerEndsWithPServer(t *testing.T) {
	r := newSupervisorRun(t, waitForLaunchLog("serves the other trainers")+`exit 0`, `exit 0`)
	if _, err := r.run(context.Background()); err != nil {
		t.Fatalf("run() = %v", err)
	}
	if log := r.stderr.String(); !strings.Contains(log, "the pserver serves the other trainers") || strings.Contains(log, "stopping the pserver") {
		t.Errorf("stderr %q: want the linger entered and ended by the pserver's exit, not by stopping it", log)
	}
}

// A pserver that never exits and ignores SIGTERM (as a Paddle pserver may
// while busy) neither keeps the pod alive nor fails it: once the trainer
// succeeded and the others are done it is killed after the grace period,
// and the trainer's exit code stands.
func TestSupervisorStopsPServerThatNeverExits(t *testing.T) {
	r := newSupervisorRun(t, `trap '' TERM; echo $$ > pserver.pid; echo > pserver.ready; while :; do sleep 1; done`,
		waitFor("pserver.ready")+`exit 0`)
	r.s.grace = 300 * time.Millisecond
	r.s.othersDone = func() bool { return true }
	if _, err := r.run(context.Background()); err != nil {
		t.Fatalf("run() = %v, want nil: the trainer succeeded", err)
	}
	if alive(t, filepath.Join(r.dir, "pserver.pid")) {
		t.Error("the pserver still runs")
	}
	if !strings.Contains(r.stderr.String(), "all trainers are done; stopping the pserver") {
		t.Errorf("stderr %q does not say why the pserver stopped", r.stderr)
	}
}

func TestSupervisorPServerFailureStopsTrainer(t *testing.T) {
	r := newSupervisorRun(t, waitFor("trainer.ready")+`exit 7`, `echo $$ > trainer.pid; echo > trainer.ready; exec sleep 60`)
	_, err := r.run(context.Background())
	if code := exitCodeOf(t, err); code != 7 {
		t.Fatalf("exit code = %d (%v), want 7", code, err)
	}
	if !strings.Contains(err.Error(), "pserver exited with code 7 before the trainer finished") {
		t.Errorf("error %q does not name the pserver's exit code", err)
	}
	if alive(t, filepath.Join(r.dir, "trainer.pid")) {
		t.Error("the trainer was not stopped")
	}
}

func TestSupervisorPServerSuccessLetsTrainerFinish(t *testing.T) {
	r := newSupervisorRun(t, `exit 0`, waitForLaunchLog("the trainer goes on")+`exit 0`)
	if _, err := r.run(context.Background()); err != nil {
		t.Fatalf("run() = %v, want nil", err)
	}
	if !strings.Contains(r.stderr.String(), "the pserver exited with code 0; the trainer goes on") {
		t.Errorf("no note in %q", r.stderr.String())
	}
}

func TestSupervisorForwardsSignals(t *testing.T) {
	r := newSupervisorRun(t,
		// The pserver may get a second SIGTERM while its handler runs (the
		// trainer's end stops it too): the handler runs once.
		`trap 'trap "" TERM; echo "pserver got TERM"; exit 0' TERM; echo ready > pserver.ready; sleep 60 & wait`,
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
	_, err := r.run(ctx)
	if code := exitCodeOf(t, err); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit code = %d (%v), want %d", code, err, 128+int(syscall.SIGKILL))
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
	_, err := r.run(context.Background())
	if code := exitCodeOf(t, err); code != 128+int(syscall.SIGINT) {
		t.Fatalf("exit code = %d (%v), want %d", code, err, 128+int(syscall.SIGINT))
	}
	if _, err := os.Stat(filepath.Join(r.dir, "trainer.ran")); !os.IsNotExist(err) {
		t.Error("the trainer started after the signal")
	}
}

func TestSupervisorTrainerCannotStart(t *testing.T) {
	r := newSupervisorRun(t, `echo $$ > pserver.pid; exec sleep 60`, `true`)
	r.s.trainer.argv = []string{filepath.Join(r.dir, "no-such-trainer")}
	_, err := r.run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "starting the trainer") {
		t.Fatalf("run() = %v, want an error starting the trainer", err)
	}
	// The pserver may have been stopped before it wrote its pid: then it
	// surely does not run.
	if b, _ := os.ReadFile(filepath.Join(r.dir, "pserver.pid")); strings.TrimSpace(string(b)) != "" && alive(t, filepath.Join(r.dir, "pserver.pid")) {
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
