package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// The verbs paddlejob shares with kubectl behave as kubectl's do, on jobs
// of shell containers: selecting (-l), output formats (-o name, jsonpath),
// watching (get -w), events, suspend and resume, logs of a previous run,
// with timestamps or since a time, name completion, delete --all --wait.
func TestCLIVerbsLikeKubectl(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	ns := newNamespace(t, pj)
	env := []string{"KUBECONFIG=" + cluster.Kubeconfig()}
	var cli cliVerb = func(args ...string) (string, string, int) { return paddlejobCLI(t, env, append(args, "-n", ns)...) }

	// Job a's worker says hello and waits; its first run fails, so its
	// container restarts in place (OnFailure, scope Pod): HOME outlives it.
	a := testutil.MakePaddleJob("a", ns).Workers(1).Image("busybox:1.36").Label("team", "ranking").
		Command(paddlev1.ReplicaWorker, "sh", "-c", `if [ -e "$HOME/ran" ]; then echo "second run"; exec sleep 600; fi; touch "$HOME/ran"; echo "first run"; exit 3`).
		RolePolicy(paddlev1.ReplicaWorker, paddlev1.RestartPolicyOnFailure).Obj()
	b := testutil.MakePaddleJob("b", ns).Workers(1).Image("busybox:1.36").Label("team", "search").
		Command(paddlev1.ReplicaWorker, "sh", "-c", "echo hello from b; exec sleep 600").Obj()
	createJob(t, pj, a)
	createJob(t, pj, b)
	poll(t, 2*time.Minute, "a runs its second run", func() (bool, string) {
		p, err := pj.Clientset().CoreV1().Pods(ns).Get(context.Background(), "a-worker-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount == 1 && cs[0].State.Running != nil, statusLine(p)
	})

	checkGetSelectsAndPrints(t, cli)
	checkLogsOfRunsAndTimes(t, cli)

	// Events of a job and its pods: the operator's and the node's.
	out, _, code := cli("events", "a")
	if code != 0 || !regexp.MustCompile(`(?m)\sNormal\s+SuccessfulCreatePod\s+paddlejob/a\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)\spod/a-worker-0\s`).MatchString(out) || strings.Contains(out, "paddlejob/b") {
		t.Errorf("events a: exit %d:\n%s", code, out)
	}

	// get -w prints b's changes as they come: suspend and resume it.
	watch := watchPhase(t, env, ns, "b")
	watch.waitFor(t, "Running")
	if out, _, code := cli("suspend", "b"); code != 0 || !strings.Contains(out, "PaddleJob "+ns+"/b suspended in context") {
		t.Errorf("suspend: exit %d: %s", code, out)
	}
	watch.waitFor(t, "Suspended")
	waitPods(t, pj, ns, "b")
	if out, _, code := cli("resume", "b"); code != 0 || !strings.Contains(out, "resumed") {
		t.Errorf("resume: exit %d: %s", code, out)
	}
	watch.waitFor(t, "Running")
	watch.stop()

	// Completion of job names, as the shell asks for it.
	// The word being completed comes last.
	if out, _, code := paddlejobCLI(t, env, "__complete", "describe", "-n", ns, ""); code != 0 || out != "a\nb\n:4\n" {
		t.Errorf("completion of describe: exit %d: %q", code, out)
	}
	if out, _, _ := paddlejobCLI(t, env, "__complete", "logs", "-n", ns, "a", "w"); !strings.Contains(out, "worker\n") || !strings.Contains(out, "worker-0\n") {
		t.Errorf("completion of logs a: %q", out)
	}

	// delete --all --wait returns once the jobs and their pods are gone.
	out, _, code = cli("delete", "--all", "--wait")
	if code != 0 || !strings.Contains(out, "PaddleJob "+ns+"/a deleted from context") || !strings.Contains(out, "PaddleJob "+ns+"/b deleted from context") {
		t.Errorf("delete --all --wait: exit %d: %s", code, out)
	}
	jobs, err := pj.List(context.Background(), ns)
	pods, perr := pj.Clientset().CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil || perr != nil || len(jobs) != 0 || len(pods.Items) != 0 {
		t.Errorf("after delete --all --wait: %d jobs, %v pods (%v, %v)", len(jobs), podNamesOf(pods.Items), err, perr)
	}
	if out, _, code := cli("delete", "--all"); code != 0 || !strings.Contains(out, "No PaddleJobs to delete") {
		t.Errorf("delete --all with none: exit %d: %s", code, out)
	}
}

// validate on a file with six problems of three kinds lists all six, one a
// line with its field path, the same on every run, without a cluster; the
// cluster's dry run (--server) refuses the job for the schema's two, in the
// same lines.
func TestValidateListsEveryProblem(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	const file = "cmd/paddlejob/testdata/six-problems.yaml"
	offline := []string{"KUBECONFIG=" + filepath.Join(t.TempDir(), "none")}
	out, errOut, code := paddlejobCLI(t, offline, "validate", "-f", file)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	problems := lines[1:]
	if code != 1 || len(lines) != 7 || !strings.HasPrefix(lines[0], file+": PaddleJob six-problems is invalid: 6 problems") {
		t.Fatalf("validate: exit %d, want 1 and a line for each of 6 problems:\n%s%s", code, out, errOut)
	}
	for i, path := range []string{"spec.intranet", "spec.worker.replicas",
		"spec.worker.template.spec.containers[0].env[0].name", "spec.worker.template.spec.initContainers[0].name",
		"spec.worker.template.spec.containers[0].image", "spec.worker.template.spec.initContainers[0].image"} {
		if !strings.HasPrefix(problems[i], "paddlejob/six-problems: "+path+": ") {
			t.Errorf("problem %d: %q, want the field %s", i+1, problems[i], path)
		}
	}
	for range 5 {
		if again, _, _ := paddlejobCLI(t, offline, "validate", "-f", file); again != out {
			t.Fatalf("a second run says otherwise:\n%s\nthe first:\n%s", again, out)
		}
	}

	ns := newNamespace(t, pj)
	server, errOut, code := paddlejobCLI(t, []string{"KUBECONFIG=" + cluster.Kubeconfig()}, "validate", "-f", file, "--server", "-n", ns)
	want := file + ": PaddleJob six-problems is invalid: 2 problems (2 by the schema)\n" + strings.Join(problems[:2], "\n") + "\n"
	if code != 1 || server != want {
		t.Errorf("validate --server: exit %d:\n%s%s\nwant exit 1 and:\n%s", code, server, errOut, want)
	}
}

// cliVerb runs the paddlejob CLI with args in the test's namespace and
// returns its stdout, its stderr and its exit code.
type cliVerb func(args ...string) (stdout, stderr string, code int)

// checkGetSelectsAndPrints checks get of TestCLIVerbsLikeKubectl's jobs a
// (team=ranking) and b (team=search): by label selector as names, and as
// jsonpath, of the list and of one job.
func checkGetSelectsAndPrints(t *testing.T, cli cliVerb) {
	t.Helper()
	if out, _, code := cli("get", "-l", "team=ranking", "-o", "name"); code != 0 || out != "paddlejob.batch.paddlepaddle.org/a\n" {
		t.Errorf("get -l team=ranking -o name: exit %d: %q", code, out)
	}
	if out, _, code := cli("get", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.worker.replicas};{end}"); code != 0 || out != "a=1;b=1;" {
		t.Errorf("get -o jsonpath: exit %d: %q", code, out)
	}
	if out, _, code := cli("get", "b", "-o", "jsonpath={.metadata.labels.team}"); code != 0 || out != "search" {
		t.Errorf("get b -o jsonpath: exit %d: %q", code, out)
	}
}

// checkLogsOfRunsAndTimes checks logs of TestCLIVerbsLikeKubectl's jobs:
// a's previous run, a's current run with timestamps, and b's since a time
// to come (nothing) and since an hour ago; and what a mistake gets.
func checkLogsOfRunsAndTimes(t *testing.T, cli cliVerb) {
	t.Helper()
	if out, _, code := cli("logs", "a", "worker-0", "--previous"); code != 0 || strings.TrimSpace(out) != "first run" {
		t.Errorf("logs --previous: exit %d: %q", code, out)
	}
	out, _, code := cli("logs", "a", "--timestamps")
	if code != 0 || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z second run\n$`).MatchString(out) {
		t.Errorf("logs --timestamps: exit %d: %q", code, out)
	}
	if out, _, code := cli("logs", "b", "--since-time", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); code != 0 || out != "" {
		t.Errorf("logs --since-time in the future: exit %d: %q", code, out)
	}
	if out, _, code := cli("logs", "b", "--since", "1h"); code != 0 || out != "hello from b\n" {
		t.Errorf("logs --since 1h: exit %d: %q", code, out)
	}
	// Mistakes: a job that does not exist, a previous run that never was.
	if _, errOut, code := cli("logs", "nosuch"); code == 0 || !strings.Contains(errOut, `"nosuch" not found`) {
		t.Errorf("logs nosuch: exit %d: %q, want it not found", code, errOut)
	}
	if _, errOut, code := cli("logs", "b", "--previous"); code == 0 || !strings.Contains(errOut, "its container has not restarted, so there is no previous run's log") {
		t.Errorf("logs --previous of a container that ran once: exit %d: %q", code, errOut)
	}
}

// phaseWatch is `paddlejob get NAME -w` printing the job's phase at each
// change, line by line into phases.
type phaseWatch struct {
	cmd    *exec.Cmd
	phases chan string
}

// watchPhase starts `paddlejob get name -w` in namespace ns with env.
func watchPhase(t *testing.T, env []string, ns, name string) *phaseWatch {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "paddlejob"), "get", name, "-w", "-n", ns, "-o", "jsonpath={.status.phase}{\"\\n\"}")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &phaseWatch{cmd: cmd, phases: make(chan string, 100)}
	go func() {
		for sc := bufio.NewScanner(stdout); sc.Scan(); {
			w.phases <- sc.Text()
		}
		close(w.phases)
	}()
	return w
}

// waitFor waits, two minutes at most, for the watch to print the phase
// want; it fails the test, naming what it printed, if the watch ends or
// the time is up first.
func (w *phaseWatch) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	var seen []string
	for {
		select {
		case p, ok := <-w.phases:
			if !ok {
				t.Fatalf("get -w ended; it printed %v", seen)
			}
			seen = append(seen, p)
			if p == want {
				return
			}
		case <-timeout:
			t.Fatalf("get -w printed %v, not %s", seen, want)
		}
	}
}

// stop interrupts the watch, as Ctrl-C does, and waits for it to end.
func (w *phaseWatch) stop() {
	_ = w.cmd.Process.Signal(syscall.SIGINT)
	_ = w.cmd.Wait()
}

func podNamesOf(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("%s(%s)", p.Name, p.Status.Phase))
	}
	return out
}

// run --follow=all returns once its job has failed, with exit code 1 and
// the reason, whatever the job's pods are doing: a rank that failed while
// its peer still ran (the operator stops it), or pods that never started
// (their servers never scheduled) in a job its deadline fails. Each run is
// given no --timeout: one that does not return is killed after 5 minutes
// and fails the test.
func TestRunFollowReturnsWhenTheJobFails(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	env := []string{"KUBECONFIG=" + cluster.Kubeconfig()}
	for _, tc := range []struct {
		name, manifest string
		wantErr        []string
		wantOut        string
	}{{
		name:     "a rank fails, its peer still runs",
		manifest: failingRankJob,
		wantErr:  []string{"PaddleJob NS/rank-fails failed: PodFailed: pod rank-fails-worker-0: container \"paddle\" exited with code 3"},
		wantOut:  "[worker-0] rank 0 fails\n",
	}, {
		name:     "its pods never start",
		manifest: neverStartsJob,
		wantErr:  []string{"PaddleJob NS/never-starts failed: DeadlineExceeded"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t, pj)
			file := filepath.Join(t.TempDir(), "job.yaml")
			if err := os.WriteFile(file, []byte(tc.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(binDir, "paddlejob"), "run", "-f", file, "--follow=all", "-n", ns)
			cmd.Env = append(os.Environ(), env...)
			var out, errOut strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errOut
			start := time.Now()
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("paddlejob run --follow=all did not return in 5 minutes:\n%s%s", out.String(), errOut.String())
			}
			t.Logf("paddlejob run --follow=all returned %v after %s", err, time.Since(start).Round(100*time.Millisecond))
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Errorf("exit code %d, want 1 (the job failed):\n%s", code, errOut.String())
			}
			for _, w := range tc.wantErr {
				if w = strings.ReplaceAll(w, "NS", ns); !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut.String())
				}
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("the followed logs lack %q:\n%s", tc.wantOut, out.String())
			}
		})
	}
}

// failingRankJob is a collective job whose rank 0 fails while rank 1
// waits: under restartPolicy Never the job fails and rank 1 is stopped.
const failingRankJob = `apiVersion: batch.paddlepaddle.org/v1
kind: PaddleJob
metadata:
  name: rank-fails
spec:
  intranet: Service
  worker:
    replicas: 2
    template:
      spec:
        containers:
        - name: paddle
          image: busybox
          command: [sh, -c, 'if [ "$PADDLE_TRAINER_ID" = 0 ]; then sleep 3; echo rank 0 fails; exit 3; fi; echo rank 1 waits; exec sleep 600']
`

// neverStartsJob is a parameter-server job whose servers no node takes:
// its trainers wait for them until the job's deadline fails it.
const neverStartsJob = `apiVersion: batch.paddlepaddle.org/v1
kind: PaddleJob
metadata:
  name: never-starts
spec:
  activeDeadlineSeconds: 15
  ps:
    replicas: 2
    template:
      spec:
        nodeSelector: {paddlejob.test/no-such-node: "true"}
        containers:
        - {name: paddle, image: busybox, command: [sleep, "600"]}
  worker:
    replicas: 2
    template:
      spec:
        containers:
        - {name: paddle, image: busybox, command: [sleep, "600"]}
`
