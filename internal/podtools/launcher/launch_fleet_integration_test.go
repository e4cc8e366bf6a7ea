//go:build integration

package launcher

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// fakeFleetProgram stands in for `python train.py`: one program for both
// roles, telling them apart by TRAINING_ROLE as a fleet program does. It
// prints its arguments, the variables fleet mode sets and what was staged.
// As a real Paddle pserver, the pserver never exits by itself: it records
// its pid once it has printed, and the SIGTERM that stops it (pserver.term).
// The trainer starts once a pserver of its pod is there, and exits with $1.
const fakeFleetProgram = `if [ "$TRAINING_ROLE" = TRAINER ] && [ -n "$PADDLE_PSERVERS_IP_PORT_LIST" ]; then
  until [ -s pserver.pid ]; do sleep 0.01; done
fi
echo "$TRAINING_ROLE/$PADDLE_TRAINING_ROLE args: $*"
echo "pservers=$PADDLE_PSERVERS_IP_PORT_LIST trainers=$PADDLE_TRAINER_ENDPOINTS n=$PADDLE_TRAINERS_NUM id=$PADDLE_TRAINER_ID self=$POD_IP:$PADDLE_PORT"
echo "TRAINER_ID=$TRAINER_ID TRAINERS=$TRAINERS job=$PADDLE_JOB_ID out=$PADDLE_OUTPUT_DIR"
ls data; ls trainer_config.py
if [ "$TRAINING_ROLE" = PSERVER ]; then
  trap 'echo TERM > pserver.term; exit 0' TERM
  echo $$ > pserver.pid
  sleep 60 & wait
  exit 0
fi
exit "$1"`

// fleetFixture is a pod of the three-node Job in fleet mode: the program after -- is
// fakeFleetProgram with the trainer's exit code and more arguments.
func fleetFixture(t *testing.T, ns, job, trainerExit string, more ...string) *launchFixture {
	f := newLaunchFixture(t, ns, job)
	f.opts.Mode, f.opts.PServerCmd, f.opts.TrainerCmd = ModeFleet, "", ""
	f.opts.ExtraArgs = append([]string{"sh", "-c", fakeFleetProgram, "train.py", trainerExit}, more...)
	return f
}

// The three-node Job's pods in fleet mode: both processes run the same program
// with the role's variables; the arguments after -- arrive unchanged (no
// v1 flags, --port is the program's business). The pserver never exits by
// itself: once the trainers of all pods recorded their end it is stopped,
// and the launcher exits 0 as its trainer did.
func TestLaunchFleetEndToEnd(t *testing.T) {
	_, cs := apiServer(t)
	ns := newNamespace(t, cs)
	const job = "paddle-cluster-job"
	createJob(t, cs, ns, job, 3)
	createJobPod(t, cs, ns, job, job+"-aaaaa", "job-name", corev1.PodRunning, "10.0.0.10")
	createJobPod(t, cs, ns, job, job+"-bbbbb", "job-name", corev1.PodRunning, "10.0.0.9")
	createJobPod(t, cs, ns, job, job+"-ccccc", "job-name", corev1.PodRunning, "10.0.0.11")

	f := fleetFixture(t, ns, job, "0", "--epochs=2", "--port=1")
	f.env["POD_IP"] = "10.0.0.10"
	f.opts.Linger = time.Minute
	output := filepath.Join(f.jobPath, job, "output")
	// The other pods' trainers: one is done already, one once this pod's
	// trainer is done and its pserver serves the others.
	writeFile(t, filepath.Join(output, "node_0", trainerExitFile), "0\n")
	go func() {
		if !waitForText(f.stderr, "the pserver serves the other trainers") {
			t.Error("the launcher never said its pserver serves the other trainers")
			return
		}
		node2 := filepath.Join(output, "node_2")
		if err := os.MkdirAll(node2, 0o755); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(filepath.Join(node2, trainerExitFile), []byte("0\n"), 0o644); err != nil {
			t.Error(err)
		}
	}()

	if err := Run(context.Background(), f.opts); err != nil {
		t.Fatalf("Run() = %v, want nil\nstderr:\n%s", err, f.stderr)
	}
	if !exists(filepath.Join(f.opts.WorkDir, "pserver.term")) {
		t.Error("the pserver got no SIGTERM once all trainers were done")
	}
	if alive(t, filepath.Join(f.opts.WorkDir, "pserver.pid")) {
		t.Error("the pserver still runs after the launcher returned")
	}
	if !strings.Contains(f.stderr.String(), "all trainers are done; stopping the pserver") {
		t.Errorf("stderr does not say why the pserver stopped:\n%s", f.stderr)
	}

	lists := "pservers=10.0.0.9:7164,10.0.0.10:7164,10.0.0.11:7164 trainers=10.0.0.9:7168,10.0.0.10:7168,10.0.0.11:7168 n=3 id=1"
	tail := "TRAINER_ID=1 TRAINERS=3 job=" + ns + "-" + job + " out=" + output + "\ntrain.txt\ntrainer_config.py\n"
	nodeDir := filepath.Join(output, "node_1")
	wantServer := "PSERVER/PSERVER args: 0 --epochs=2 --port=1\n" + lists + " self=10.0.0.10:7164\n" + tail
	if got := readFile(t, filepath.Join(nodeDir, "server.log")); got != wantServer {
		t.Errorf("server.log =\n%s\nwant\n%s", got, wantServer)
	}
	wantTrain := "TRAINER/TRAINER args: 0 --epochs=2 --port=1\n" + lists + " self=10.0.0.10:7168\n" + tail
	if got := readFile(t, filepath.Join(nodeDir, "train.log")); got != wantTrain {
		t.Errorf("train.log =\n%s\nwant\n%s", got, wantTrain)
	}
	if got := readFile(t, filepath.Join(nodeDir, trainerExitFile)); got != "0\n" {
		t.Errorf("%s = %q, want 0", trainerExitFile, got)
	}
	for _, want := range []string{"[pserver] PSERVER/PSERVER args:", "[trainer] TRAINER/TRAINER args:"} {
		if !strings.Contains(f.stdout.String(), want) {
			t.Errorf("stdout %q lacks %q", f.stdout.String(), want)
		}
	}
}

// A failed trainer stops the pserver at once, and its exit code is the
// launcher's.
func TestLaunchFleetTrainerFailure(t *testing.T) {
	_, cs := apiServer(t)
	ns := newNamespace(t, cs)
	const job = "ctr"
	createJob(t, cs, ns, job, 2)
	createJobPod(t, cs, ns, job, "ctr-a", "job-name", corev1.PodRunning, "10.6.0.2")
	createJobPod(t, cs, ns, job, "ctr-b", "job-name", corev1.PodRunning, "10.6.0.1")

	f := fleetFixture(t, ns, job, "3")
	for _, k := range []string{"CONF_PADDLE_NIC", "CONF_PADDLE_PORT", "CONF_PADDLE_PORTS_NUM", "CONF_PADDLE_PORTS_NUM_SPARSE", "CONF_PADDLE_GRADIENT_NUM"} {
		delete(f.env, k)
	}
	f.env["POD_IP"] = "10.6.0.1"
	f.opts.Linger = time.Minute
	err := Run(context.Background(), f.opts)
	if code := exitCodeOf(t, err); code != 3 {
		t.Fatalf("Run() = %v (exit code %d), want the trainer's 3\nstderr:\n%s", err, code, f.stderr)
	}
	if !exists(filepath.Join(f.opts.WorkDir, "pserver.term")) {
		t.Error("the pserver got no SIGTERM when the trainer failed")
	}
	if alive(t, filepath.Join(f.opts.WorkDir, "pserver.pid")) {
		t.Error("the pserver still runs")
	}
	// No CONF_PADDLE_*: the pserver on 7164, the trainer on the next port.
	got := readFile(t, filepath.Join(f.jobPath, job, "output", "node_0", "train.log"))
	if want := "pservers=10.6.0.1:7164,10.6.0.2:7164 trainers=10.6.0.1:7165,10.6.0.2:7165 n=2 id=0 self=10.6.0.1:7165\n"; !strings.Contains(got, want) {
		t.Errorf("train.log =\n%s\nlacks\n%s", got, want)
	}
}

// A one-pod Job without CONF_PADDLE_PORT trains alone in fleet mode too:
// no pserver, no pserver list (fleet then trains locally), trainer 0 of 1.
// A list the launcher itself inherited is not passed on.
func TestLaunchFleetOnePodJobTrainsAlone(t *testing.T) {
	_, cs := apiServer(t)
	ns := newNamespace(t, cs)
	createJob(t, cs, ns, "quickstart", 1)
	t.Setenv("PADDLE_PSERVERS_IP_PORT_LIST", "10.9.9.9:7164")
	t.Setenv("PADDLE_PORT", "7164")

	f := newLaunchFixture(t, ns, "quickstart")
	for _, k := range []string{"CONF_PADDLE_NIC", "CONF_PADDLE_PORT", "CONF_PADDLE_PORTS_NUM", "CONF_PADDLE_PORTS_NUM_SPARSE", "CONF_PADDLE_GRADIENT_NUM", "TRAIN_CONFIG_DIR"} {
		delete(f.env, k)
	}
	f.opts.Mode, f.opts.PServerCmd, f.opts.TrainerCmd = ModeFleet, "", ""
	f.opts.ExtraArgs = []string{"sh", "-c", `echo "args: $*"; echo "${PADDLE_PSERVERS_IP_PORT_LIST-unset} ${PADDLE_PORT-unset} $TRAINING_ROLE $PADDLE_TRAINER_ID/$PADDLE_TRAINERS_NUM $TRAINER_ID/$TRAINERS $PADDLE_JOB_ID $PADDLE_OUTPUT_DIR"; ls data`, "train.py", "--num_passes=15"}
	if err := Run(context.Background(), f.opts); err != nil {
		t.Fatalf("Run() = %v\nstderr:\n%s", err, f.stderr)
	}
	output := filepath.Join(f.jobPath, "quickstart", "output")
	got := readFile(t, filepath.Join(output, "node_0", "train.log"))
	want := "args: --num_passes=15\nunset unset TRAINER 0/1 0/1 " + ns + "-quickstart " + output + "\ntrain.txt\n"
	if got != want {
		t.Errorf("train.log = %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(output, "node_0", "server.log")); !os.IsNotExist(err) {
		t.Error("a pserver ran")
	}
}

// A single-node Job in fleet mode: no job variables, no cluster; the program runs
// with the arguments given, logging to the working directory.
