//go:build integration

package launcher

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/paddlejob/paddlejob/internal/testutil"
)

// The stand-ins for `paddle pserver` and `paddle train`: real processes that
// print their arguments. The pserver records its pid once it has printed,
// runs until stopped and records the SIGTERM that stops it (pserver.term),
// so a test tells a pserver the launcher stopped from one it waited out;
// the trainer starts once the pserver's pid is there, shows what was
// staged and its TRAINER_ID, and exits 3, as a failed trainer would.
const (
	fakePServer = `sh -c 'trap "echo TERM > pserver.term; exit 0" TERM; echo pserver "$@"; echo $$ > pserver.pid; sleep 60 & wait' pserver`
	fakeTrainer = `sh -c 'until [ -s pserver.pid ]; do sleep 0.01; done; echo trainer "$@"; ls data; ls trainer_config.py; echo TRAINER_ID=$TRAINER_ID TRAINERS=$TRAINERS POD_IP=$POD_IP; exit 3' trainer`
)

type launchFixture struct {
	env     map[string]string
	opts    Options
	jobPath string
	stdout  *testutil.SyncBuffer
	stderr  *testutil.SyncBuffer
}

// waitForText waits until buf holds text, up to 30 s; it reports whether it
// does. Goroutines that act on the launcher's progress use it.
func waitForText(buf *testutil.SyncBuffer, text string) bool {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(buf.String(), text) {
			return true
		}
	}
	return false
}

// newLaunchFixture is the three-node Job's pod environment for job in ns, with a
// kubeconfig for the test API server and a shared volume in a temp dir
// holding trainer data and the training config.
func newLaunchFixture(t *testing.T, ns, job string) *launchFixture {
	t.Helper()
	env, _ := apiServer(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	jobPath := t.TempDir()
	for id := range 3 {
		writeFile(t, filepath.Join(jobPath, job, string(rune('0'+id)), "data", "train.txt"), "part\n")
	}
	writeFile(t, filepath.Join(jobPath, job, "recommendation", "trainer_config.py"), "# config\n")

	f := &launchFixture{env: map[string]string{}, jobPath: jobPath, stdout: &testutil.SyncBuffer{}, stderr: &testutil.SyncBuffer{}}
	for k, v := range threeNodeJobEnv {
		f.env[k] = v
	}
	f.env["JOB_NAME"] = job
	f.env["JOB_NAMESPACE"] = ns
	f.env["JOB_PATH"] = jobPath
	f.env["KUBECONFIG"] = kubeconfig

	f.opts = DefaultOptions()
	// The fixture is the three-node Job's v1 setup; fleet-mode tests switch the mode
	// and give a program instead of the two commands.
	f.opts.Mode = ModeLegacyFlags
	f.opts.PServerCmd = fakePServer
	f.opts.TrainerCmd = fakeTrainer
	f.opts.WorkDir = t.TempDir()
	f.opts.PollInterval = 100 * time.Millisecond
	f.opts.Timeout = 30 * time.Second
	f.opts.GracePeriod = 5 * time.Second
	f.opts.Linger = 0 // no other pod's trainer runs here to wait for
	f.opts.Getenv = func(k string) string { return f.env[k] }
	f.opts.Stdout, f.opts.Stderr = f.stdout, f.stderr
	f.opts.interfaceAddrs = func() ([]netip.Addr, error) { return nil, nil }
	f.opts.namespaceFile = filepath.Join(t.TempDir(), "no-namespace-file")
	return f
}

func TestLaunchEndToEnd(t *testing.T) {
	_, cs := apiServer(t)
	ns := newNamespace(t, cs)
	const job = "paddle-cluster-job"
	createJob(t, cs, ns, job, 3)
	createJobPod(t, cs, ns, job, job+"-aaaaa", "job-name", corev1.PodRunning, "10.0.0.10")
	createJobPod(t, cs, ns, job, job+"-bbbbb", "job-name", corev1.PodRunning, "10.0.0.9")
	createJobPod(t, cs, ns, job, job+"-ccccc", "job-name", corev1.PodRunning, "10.0.0.11")

	f := newLaunchFixture(t, ns, job)
	f.env["POD_IP"] = "10.0.0.10"
	f.opts.ExtraArgs = []string{"--num_passes=10", "--ports_num=2", "--config=trainer_config.py"}

	err := Run(context.Background(), f.opts)
	if code := exitCodeOf(t, err); code != 3 {
		t.Fatalf("Run() = %v (exit code %d), want the trainer's exit code 3\nstderr:\n%s", err, code, f.stderr)
	}
	if !exists(filepath.Join(f.opts.WorkDir, "pserver.term")) {
		t.Error("the pserver got no SIGTERM when the trainer ended")
	}
	if alive(t, filepath.Join(f.opts.WorkDir, "pserver.pid")) {
		t.Error("the pserver still runs after the trainer exited")
	}

	nodeDir := filepath.Join(f.jobPath, job, "output", "node_1")
	common := "--nics=eth0 --port=7164 --ports_num=2 --ports_num_for_sparse=2 --num_gradient_servers=3 " +
		"--pservers=10.0.0.9,10.0.0.10,10.0.0.11 --comment=paddle_process_by_paddle"
	if got, want := readFile(t, filepath.Join(nodeDir, "server.log")), "pserver "+common+"\n"; got != want {
		t.Errorf("server.log =\n  %q\nwant\n  %q", got, want)
	}
	wantTrain := "trainer " + common + " --num_passes=10 --config=trainer_config.py --trainer_id=1 --save_dir=" +
		filepath.Join(f.jobPath, job, "output") + "\n" +
		"train.txt\n" + "trainer_config.py\n" + "TRAINER_ID=1 TRAINERS=3 POD_IP=10.0.0.10\n"
	if got := readFile(t, filepath.Join(nodeDir, "train.log")); got != wantTrain {
		t.Errorf("train.log =\n  %q\nwant\n  %q", got, wantTrain)
	}
	if want := "[trainer] TRAINER_ID=1 TRAINERS=3 POD_IP=10.0.0.10\n"; !strings.Contains(f.stdout.String(), want) {
		t.Errorf("stdout %q lacks %q", f.stdout.String(), want)
	}
	if want := "[pserver] pserver --nics=eth0"; !strings.Contains(f.stdout.String(), want) {
		t.Errorf("stdout %q lacks %q", f.stdout.String(), want)
	}
}

// Without POD_IP the launcher finds its pod by hostname, reads the count
// from the Job and waits for a late peer.
func TestLaunchByHostnameWaitsForPeer(t *testing.T) {
	_, cs := apiServer(t)
	ns := newNamespace(t, cs)
	const job = "wd"
	createJob(t, cs, ns, job, 2)
	createJobPod(t, cs, ns, job, "wd-self", "job-name", corev1.PodRunning, "10.4.0.20")
	createJobPod(t, cs, ns, job, "wd-late", "job-name", corev1.PodPending, "")

	f := newLaunchFixture(t, ns, job)
	f.env["HOSTNAME"] = "wd-self"
	f.env["CONF_PADDLE_GRADIENT_NUM"] = "2"
	f.opts.TrainerCmd = `sh -c 'echo trainer "$@"' trainer`
	// wd-late runs once the launcher has seen it Pending.
	go func() {
		if !waitForText(f.stderr, "waiting for: wd-late (Pending)") {
			t.Error("the launcher never said it waited for wd-late")
			return
		}
		setPodStatus(t, cs, getPod(t, cs, ns, "wd-late"), corev1.PodRunning, "10.4.0.3")
	}()
	if err := Run(context.Background(), f.opts); err != nil {
		t.Fatalf("Run() = %v\nstderr:\n%s", err, f.stderr)
	}
	// 10.4.0.3 sorts before 10.4.0.20, so this pod is trainer 1.
	got := readFile(t, filepath.Join(f.jobPath, job, "output", "node_1", "train.log"))
	if !strings.Contains(got, "--pservers=10.4.0.3,10.4.0.20 ") || !strings.Contains(got, "--trainer_id=1 ") {
		t.Errorf("train.log = %q", got)
	}
	if !strings.Contains(f.stderr.String(), "waiting for: wd-late (Pending)") {
		t.Errorf("stderr %q does not say it waited for wd-late", f.stderr)
	}
}

func TestLaunchTimesOutNamingMissingPods(t *testing.T) {
	_, cs := apiServer(t)
	ns := newNamespace(t, cs)
	const job = "paddle-cluster-job"
	createJob(t, cs, ns, job, 3)
	createJobPod(t, cs, ns, job, job+"-r2d2q", "job-name", corev1.PodRunning, "10.5.0.1")
	createJobPod(t, cs, ns, job, job+"-x7k2p", "job-name", corev1.PodPending, "")

	f := newLaunchFixture(t, ns, job)
	f.env["POD_IP"] = "10.5.0.1"
	f.opts.Mode, f.opts.PServerCmd, f.opts.TrainerCmd = ModeFleet, "", ""
	f.opts.ExtraArgs = []string{"python", "train.py"}
	f.opts.Timeout = time.Second
	err := Run(context.Background(), f.opts)
	want := "1 of 3 pods are running with an IP; waiting for: paddle-cluster-job-x7k2p (Pending), 1 pod not created yet"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Run() = %v, want a timeout naming the missing pods", err)
	}
	if _, statErr := os.Stat(filepath.Join(f.jobPath, job, "output")); !os.IsNotExist(statErr) {
		t.Errorf("the output directory was created before the peers were known")
	}
}

// A one-pod Job without CONF_PADDLE_PORT runs the trainer alone.
func TestLaunchOnePodJobRunsTrainerAlone(t *testing.T) {
	_, cs := apiServer(t)
	ns := newNamespace(t, cs)
	createJob(t, cs, ns, "quickstart", 1)

	f := newLaunchFixture(t, ns, "quickstart")
	for _, k := range []string{"CONF_PADDLE_NIC", "CONF_PADDLE_PORT", "CONF_PADDLE_PORTS_NUM", "CONF_PADDLE_PORTS_NUM_SPARSE", "CONF_PADDLE_GRADIENT_NUM", "TRAIN_CONFIG_DIR"} {
		delete(f.env, k)
	}
	f.opts.TrainerCmd = `sh -c 'echo trainer "$@"; ls data' trainer`
	f.opts.ExtraArgs = []string{"--num_passes=15"}
	if err := Run(context.Background(), f.opts); err != nil {
		t.Fatalf("Run() = %v\nstderr:\n%s", err, f.stderr)
	}
	got := readFile(t, filepath.Join(f.jobPath, "quickstart", "output", "node_0", "train.log"))
	want := "trainer --num_passes=15 --trainer_id=0 --save_dir=" + filepath.Join(f.jobPath, "quickstart", "output") + "\ntrain.txt\n"
	if got != want {
		t.Errorf("train.log = %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(f.jobPath, "quickstart", "output", "node_0", "server.log")); !os.IsNotExist(err) {
		t.Error("a pserver ran")
	}
}

// jobParallelism is a Cluster that only knows a Job's parallelism, for the
// mode decision; discovery itself is tested against a real API server.
