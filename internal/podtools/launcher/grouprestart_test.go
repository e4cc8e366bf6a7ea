package launcher

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
)

func podWithUID(uid string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
}

func TestRunNameNamesTheSetOfPods(t *testing.T) {
	a := runName([]corev1.Pod{podWithUID("u1"), podWithUID("u2"), podWithUID("u3")})
	if b := runName([]corev1.Pod{podWithUID("u3"), podWithUID("u1"), podWithUID("u2")}); a != b {
		t.Errorf("the same pods in another order are run %q and %q", a, b)
	}
	if c := runName([]corev1.Pod{podWithUID("u1"), podWithUID("u2"), podWithUID("u4")}); a == c {
		t.Errorf("a replaced pod leaves the run name %q", a)
	}
}

func TestOnSilence(t *testing.T) {
	for _, tc := range []struct {
		name          string
		quiet         time.Duration
		attempt, max  int
		trainerEnded  bool
		want          stallAction
		wantReasonHas string
	}{
		{name: "within the deadline", quiet: 59 * time.Second, max: 3, want: stallNone},
		{name: "silent: restart", quiet: 60 * time.Second, max: 3, want: stallRestart, wantReasonHas: "printed nothing for 1m0s (--progress-deadline=1m0s)"},
		{name: "last restart used", quiet: 2 * time.Minute, attempt: 3, max: 3, want: stallFail, wantReasonHas: "after 3 restarts of every pod (--max-restarts=3)"},
		{name: "no restarts allowed", quiet: time.Minute, max: 0, want: stallFail, wantReasonHas: "--max-restarts=0"},
		{name: "a trainer ended", quiet: time.Minute, max: 3, trainerEnded: true, want: stallFail, wantReasonHas: "a trainer of the job has ended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			if tc.trainerEnded {
				writeFile(t, filepath.Join(out, "node_1", trainerExitFile), "0\n")
			}
			g := &groupRestart{dir: filepath.Join(out, "restarts", "r"), output: out, nodes: 2, deadline: time.Minute, max: tc.max, attempt: tc.attempt}
			got, why := g.onSilence(tc.quiet)
			if got != tc.want || !strings.Contains(why, tc.wantReasonHas) {
				t.Errorf("onSilence(%s) = %v %q, want %v with %q", tc.quiet, got, why, tc.want, tc.wantReasonHas)
			}
		})
	}
}

func TestRestartRequestsAndStops(t *testing.T) {
	out := t.TempDir()
	g0 := &groupRestart{dir: filepath.Join(out, "restarts", "r"), output: out, id: 0, nodes: 2}
	g1 := &groupRestart{dir: g0.dir, output: out, id: 1, nodes: 2}
	if g1.requested() {
		t.Fatal("a restart is requested before anyone asked")
	}
	if err := g0.request("first"); err != nil {
		t.Fatal(err)
	}
	if err := g1.request("second"); err != nil {
		t.Fatal(err)
	}
	if !g1.requested() {
		t.Fatal("node 1 does not see node 0's request")
	}
	if got := readFile(t, filepath.Join(g0.attemptDir(1), "requested")); got != "node_0: first\n" {
		t.Errorf("the request says %q, want the first asker's reason", got)
	}
	if err := g0.markStopped(); err != nil {
		t.Fatal(err)
	}
	if g0.allStopped() {
		t.Fatal("all stopped while node 1 runs")
	}
	if err := g1.markStopped(); err != nil {
		t.Fatal(err)
	}
	if !g0.allStopped() {
		t.Fatal("not all stopped after both nodes did")
	}
}

// hangsOnce is a trainer that hangs silently on its first start (as a
// Paddle trainer in a lost barrier) and trains on the next.
const hangsOnce = `if [ -e hung ]; then echo trained; exit 0; fi; touch hung; echo hanging; exec sleep 60`

// eventually reports whether cond came to hold within runBound.
func eventually(cond func() bool) bool {
	return utilwait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, runBound, true,
		func(context.Context) (bool, error) { return cond(), nil }) == nil
}

// peerNode plays another pod of the run: once a restart is requested it
// stops (records node_<id>) as its launcher would.
func peerNode(t *testing.T, g *groupRestart, id int) {
	go func() {
		peer := *g
		peer.id = id
		if !eventually(peer.requested) {
			t.Errorf("node_%d: no restart was requested", id)
			return
		}
		if err := peer.markStopped(); err != nil {
			t.Error(err)
		}
	}()
}

// A silent trainer makes its launcher ask every pod to restart; once the
// other pod stopped too, the pserver and trainer start again, the first
// attempt's logs kept, and the job trains.
func TestSilentTrainerRestartsEveryPod(t *testing.T) {
	r := newSupervisorRun(t, stoppedPServer, waitFor("pserver.ready")+hangsOnce)
	r.s.othersDone = func() bool { return true }
	out := t.TempDir()
	r.s.restarts = &groupRestart{dir: filepath.Join(out, "restarts", "r"), output: out, id: 0, nodes: 2,
		deadline: 300 * time.Millisecond, max: 3, wait: runBound}
	peerNode(t, r.s.restarts, 1)
	if _, err := r.run(context.Background()); err != nil {
		t.Fatalf("run() = %v, want the restarted trainer's success\nstderr:\n%s", err, r.stderr)
	}
	if got := readFile(t, filepath.Join(r.dir, "train.0.log")); got != "hanging\n" {
		t.Errorf("the first attempt's train.0.log = %q, want hanging", got)
	}
	if got := readFile(t, filepath.Join(r.dir, "train.log")); got != "trained\n" {
		t.Errorf("train.log = %q, want the second attempt's", got)
	}
	if !exists(filepath.Join(r.dir, "server.0.log")) {
		t.Error("the first pserver's log was not kept")
	}
	req := readFile(t, filepath.Join(out, "restarts", "r", "1", "requested"))
	if !strings.HasPrefix(req, "node_0: the trainer printed nothing for") {
		t.Errorf("the request says %q, want node_0 and the silence", req)
	}
	if !strings.Contains(r.stderr.String(), "restarting the pserver and trainer of every pod (restart 1 of at most 3)") {
		t.Errorf("stderr does not say it restarted:\n%s", r.stderr)
	}
	if alive(t, filepath.Join(r.dir, "pserver.pid")) {
		t.Error("a pserver still runs after the launch")
	}
}

// Another pod's request restarts this pod's processes although its own
// trainer prints.
func TestRestartRequestedByAnotherPod(t *testing.T) {
	r := newSupervisorRun(t, stoppedPServer, waitFor("pserver.ready")+`if [ -e hung ]; then echo trained; exit 0; fi; touch hung; while :; do echo step; sleep 0.05; done`)
	r.s.othersDone = func() bool { return true }
	out := t.TempDir()
	g := &groupRestart{dir: filepath.Join(out, "restarts", "r"), output: out, id: 0, nodes: 2, deadline: time.Hour, max: 1, wait: runBound}
	r.s.restarts = g
	go func() {
		peer := *g
		peer.id = 1
		if !eventually(func() bool { return exists(filepath.Join(r.dir, "hung")) }) {
			t.Error("the trainer never started")
			return
		}
		if err := peer.request("node 1's trainer was silent"); err != nil {
			t.Error(err)
		}
		if err := peer.markStopped(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := r.run(context.Background()); err != nil {
		t.Fatalf("run() = %v\nstderr:\n%s", err, r.stderr)
	}
	if got := readFile(t, filepath.Join(r.dir, "train.log")); got != "trained\n" {
		t.Errorf("train.log = %q, want the restarted trainer's", got)
	}
	if !strings.Contains(r.stderr.String(), "node_1: node 1's trainer was silent") {
		t.Errorf("stderr does not give the other pod's reason:\n%s", r.stderr)
	}
}

// With no restart left, a silent trainer ends the launch with code 124,
// both processes stopped.
func TestSilentTrainerWithoutRestartsFails(t *testing.T) {
	r := newSupervisorRun(t, stoppedPServer, waitFor("pserver.ready")+`echo $$ > trainer.pid; exec sleep 60`)
	out := t.TempDir()
	r.s.restarts = &groupRestart{dir: filepath.Join(out, "restarts", "r"), output: out, id: 0, nodes: 2,
		deadline: 200 * time.Millisecond, max: 0, wait: runBound}
	_, err := r.run(context.Background())
	if code := exitCodeOf(t, err); code != hungExitCode {
		t.Fatalf("run() = %v (code %d), want %d", err, code, hungExitCode)
	}
	if !strings.Contains(err.Error(), "--max-restarts=0") {
		t.Errorf("the error %q does not name --max-restarts", err)
	}
	for _, pid := range []string{"pserver.pid", "trainer.pid"} {
		if alive(t, filepath.Join(r.dir, pid)) {
			t.Errorf("%s still runs", pid)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "restarts", "r", "1")); !os.IsNotExist(err) {
		t.Error("a restart was requested although none was allowed")
	}
}
