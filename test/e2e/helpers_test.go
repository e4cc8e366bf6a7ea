package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// jobTimeout bounds one job's run on two busy cores.
const jobTimeout = 4 * time.Minute

// loadJob reads a PaddleJob manifest of the repository, strictly.
func loadJob(t testing.TB, path string) *paddlev1.PaddleJob {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	// paddle-operator's example 4 holds a PodGroup beside the job: keep the job's document.
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if regexp.MustCompile(`(?m)^kind:\s*PaddleJob\s*$`).MatchString(doc) {
			data = []byte(doc)
			break
		}
	}
	job := &paddlev1.PaddleJob{}
	if err := yaml.UnmarshalStrict(data, job); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return job
}

// newNamespace creates a namespace for one test, labelled PodSecurity
// privileged: the suite's jobs mount hostPath volumes and use
// `intranet: Host`, as a cluster's owner lets them in namespaces of their
// own (up labels default so). The cluster's default level (baseline) is
// probed in namespaces that keep it (probePodSecurity).
func newNamespace(t testing.TB, pj *client.Client) string {
	t.Helper()
	return createNamespace(t, pj, map[string]string{localcluster.PodSecurityEnforceLabel: localcluster.PodSecurityPrivileged})
}

// createNamespace creates a namespace with labels and waits for its default
// service account.
func createNamespace(t testing.TB, pj *client.Client, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-", Labels: labels}}
	got, err := pj.Clientset().CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Pods cannot be created before the namespace's default service account.
	poll(t, time.Minute, "the default service account of namespace "+got.Name, func() (bool, string) {
		_, err := pj.Clientset().CoreV1().ServiceAccounts(got.Name).Get(context.Background(), "default", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, "created"
	})
	return got.Name
}

// progressDeadline is the progress deadline recoverable gives a job: above
// the examples' longest gap between two reports on two loaded cores
// (start-up, before the first report, is the longest).
const progressDeadline = 90

// recoverable gives a parameter-server or elastic job that has none the
// restart policy and progress deadline a production user gives one: a Paddle
// crash (an MKL SIGSEGV in a parameter server) or hang (Paddle 3.0's GEO
// start-up barrier, an elastic launcher waiting for a rank that failed while
// the group re-formed; docs/paddle-known-issues.md) then restarts the whole
// job — recovered by the product, never retried by the test. Its restarts
// are logged when the test ends. Roles with a policy of their own (Never
// included) keep it; elastic workers restart by default (OnFailure).
func recoverable(job *paddlev1.PaddleJob) {
	if job.Spec.PS == nil && !job.Spec.IsElastic() {
		return
	}
	for _, rt := range paddlev1.ReplicaTypes {
		if rs := job.Spec.Replicas(rt); rs != nil && rs.RestartPolicy == "" && job.Defaulted().Spec.Replicas(rt).RestartPolicy == paddlev1.RestartPolicyNever {
			rs.RestartPolicy = paddlev1.RestartPolicyExitCode
		}
	}
	if job.Spec.ProgressDeadlineSeconds == nil {
		job.Spec.ProgressDeadlineSeconds = ptr.To[int64](progressDeadline)
	}
}

// createJob creates a job (recoverable, when it is a parameter-server or elastic job)
// that the test deletes when it ends, so that a job a failed test leaves
// running holds no resources the next test needs. Before, it logs the job's
// restarts, so the rate at which Paddle fails stays visible.
func createJob(t testing.TB, pj *client.Client, job *paddlev1.PaddleJob) {
	t.Helper()
	recoverable(job)
	createJobAsWritten(t, pj, job)
}

// createJobAsWritten creates a job with the policies it has (none: the
// defaults a user gets), deleted when the test ends, as createJob.
func createJobAsWritten(t testing.TB, pj *client.Client, job *paddlev1.PaddleJob) {
	t.Helper()
	if _, err := pj.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		logRestarts(t, pj, job.Namespace, job.Name)
		if err := pj.Delete(context.Background(), job.Namespace, job.Name); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting PaddleJob %s/%s: %v", job.Namespace, job.Name, err)
		}
	})
}

// logRestarts logs how often a job restarted, and why the last time.
func logRestarts(t testing.TB, pj *client.Client, ns, name string) {
	job, err := pj.Get(context.Background(), ns, name)
	if err != nil {
		return
	}
	why := ""
	if c := meta.FindStatusCondition(job.Status.Conditions, paddlev1.JobRestarting); c != nil {
		why = ": " + c.Message
	}
	line := fmt.Sprintf("PaddleJob %s/%s ended %s with restartCount %d%s", ns, name, job.Status.Phase, job.Status.RestartCount, why)
	t.Log(line)
	if job.Status.RestartCount > 0 {
		// Also where a passing test's log is not shown (go test without -v,
		// as make test runs it): the rate of Paddle's failures stays visible.
		fmt.Fprintf(os.Stderr, "%s: %s\n", t.Name(), line)
	}
}

// runToEnd creates the job in a fresh namespace and waits until it finishes.
func runToEnd(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) *paddlev1.PaddleJob {
	t.Helper()
	job.Namespace = newNamespace(t, pj)
	start := time.Now()
	createJob(t, pj, job)
	done, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		dumpJob(t, pj, job.Namespace, job.Name)
		t.Fatal(err)
	}
	t.Logf("PaddleJob %s/%s %s in %s", job.Namespace, job.Name, done.Status.Phase, time.Since(start).Round(100*time.Millisecond))
	return done
}

// mustComplete fails the test with the job's failure when it did not complete.
func mustComplete(t testing.TB, pj *client.Client, job *paddlev1.PaddleJob) {
	t.Helper()
	if job.Status.Phase != paddlev1.PaddleJobCompleted {
		dumpJob(t, pj, job.Namespace, job.Name)
		t.Fatalf("PaddleJob %s ended %s: %s", job.Name, job.Status.Phase, client.FailureMessage(job))
	}
	// What finished and how: every worker succeeded, and no role reports a
	// pod still running (the servers the operator stopped are "stopped").
	for _, rt := range paddlev1.ReplicaTypes {
		rs, n := job.Status.ReplicaStatus(rt), job.Spec.ReplicaCount(rt)
		if job.Spec.Replicas(rt) == nil {
			continue
		}
		if rs == nil || rs.Running+rs.Pending+rs.Starting+rs.Unknown != 0 || rs.Ready != fmt.Sprintf("0/%d", n) ||
			rt == paddlev1.ReplicaWorker && int(rs.Succeeded) != n {
			t.Errorf("PaddleJob %s completed with %s status %+v (%d replicas)", job.Name, rt, rs, n)
		}
	}
}

// podLog reads a pod's whole log through the API server (and so the node's
// kubelet API), as kubectl logs does.
func podLog(t *testing.T, pj *client.Client, ns, pod string) string {
	t.Helper()
	r, err := pj.Logs(context.Background(), ns, pod, client.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// podsDir is a fresh directory for pods to read and write through a
// hostPath: 0777, as one gives a directory to pods of any uid (a root
// node's pods are not root on the host, docs/local-node.md#host-paths).
func podsDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// outputDir points a job's output hostPath volume at a fresh directory.
func outputDir(t testing.TB, job *paddlev1.PaddleJob) string {
	t.Helper()
	dir := podsDir(t)
	for _, rt := range paddlev1.ReplicaTypes {
		if rs := job.Spec.Replicas(rt); rs != nil {
			for i := range rs.Template.Spec.Volumes {
				if v := &rs.Template.Spec.Volumes[i]; v.HostPath != nil && v.Name == "output" {
					v.HostPath.Path = dir
				}
			}
		}
	}
	return dir
}

// withArgs sets the args of every container of the job: the example
// program's flags, after its image's ENTRYPOINT.
func withArgs(job *paddlev1.PaddleJob, args ...string) {
	for _, rt := range paddlev1.ReplicaTypes {
		if rs := job.Spec.Replicas(rt); rs != nil {
			for i := range rs.Template.Spec.Containers {
				rs.Template.Spec.Containers[i].Args = args
			}
		}
	}
}

// dumpJob logs what a failed test needs to see: the job, its pods and logs.
func dumpJob(t testing.TB, pj *client.Client, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if job, err := pj.Get(ctx, ns, name); err == nil {
		t.Logf("job status: %+v", job.Status)
	}
	pods, _ := pj.Pods(ctx, ns, name)
	for _, p := range pods {
		t.Logf("pod %s: %s %s", p.Name, p.Status.Phase, statusLine(&p))
		if r, err := pj.Logs(ctx, ns, p.Name, client.LogOptions{TailLines: 20}); err == nil {
			b, _ := io.ReadAll(r)
			r.Close()
			t.Logf("log of %s:\n%s", p.Name, b)
		}
	}
}

func statusLine(p *corev1.Pod) string {
	var out string
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		switch {
		case cs.State.Waiting != nil:
			out += fmt.Sprintf(" %s:waiting(%s: %s)", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Terminated != nil:
			out += fmt.Sprintf(" %s:exit(%d)", cs.Name, cs.State.Terminated.ExitCode)
		case cs.State.Running != nil:
			out += fmt.Sprintf(" %s:running", cs.Name)
		}
	}
	return out
}

// waitNoPods waits until the job's pods are gone.
func waitNoPods(t *testing.T, pj *client.Client, ns, name string) {
	t.Helper()
	waitPods(t, pj, ns, name)
}

// waitPods waits until the job's pods are exactly those named.
func waitPods(t *testing.T, pj *client.Client, ns, name string, want ...string) {
	t.Helper()
	var got []string
	if _, ok := waitFor(time.Minute, func() (bool, string) {
		pods, err := pj.Pods(context.Background(), ns, name)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, p := range pods {
			got = append(got, p.Name)
		}
		return slices.Equal(got, want), ""
	}); !ok {
		t.Errorf("the pods of %s are %v, want %v", name, got, want)
	}
}

// followLogs follows the log of each named pod of a job from the moment its
// container starts to its end, so that the logs of pods a finished job
// deletes (its parameter servers, or every pod under cleanPodPolicy
// OnCompletion) can still be checked; the function it returns waits for
// the job to finish and returns them. A pod recreated meanwhile (the job restarted) is followed
// again: the log returned is its last incarnation's, the one that ran to
// the end.
func followLogs(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob, pods ...string) func() map[string]string {
	t.Helper()
	ns := job.Namespace
	ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
	finished := func() bool {
		j, err := pj.Get(ctx, ns, job.Name)
		return err == nil && j.Status.IsFinished()
	}
	var mu sync.Mutex
	logs := map[string]string{}
	var wg sync.WaitGroup
	for _, pod := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var followed types.UID // the incarnation whose log ended last
			var last string
			defer func() {
				mu.Lock()
				logs[pod] = last
				mu.Unlock()
			}()
			// Until the job is over and its pod's last run was read (or
			// it never ran), or the test ends.
			_ = wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
				p, err := pj.Clientset().CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
				if err == nil && p.UID != followed && started(p) {
					if r, err := pj.Logs(ctx, ns, pod, client.LogOptions{Follow: true}); err == nil {
						var buf bytes.Buffer
						_, _ = io.Copy(&buf, r)
						r.Close()
						followed, last = p.UID, buf.String()
					}
					return false, nil
				}
				return finished(), nil
			})
		}()
	}
	return func() map[string]string {
		wg.Wait()
		cancel()
		return logs
	}
}

// started reports whether a pod's first container has started.
func started(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == p.Spec.Containers[0].Name {
			return cs.State.Running != nil || cs.State.Terminated != nil
		}
	}
	return false
}

// podNames are the names of every pod a job's spec asks for.
func podNames(job *paddlev1.PaddleJob) []string {
	var out []string
	for _, rt := range paddlev1.ReplicaTypes {
		for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
			out = append(out, paddlev1.PodName(job.Name, rt, i))
		}
	}
	return out
}

// findPodProcess is the pid of a process of a pod on the local node whose
// arguments match accepts, 0 when none runs; the pod's HOSTNAME tells its
// processes from others'.
func findPodProcess(pod string, match func(args []string) bool) int {
	return findPodProcessWithEnv(pod, nil, match)
}

// findPodProcessWithEnv is findPodProcess for a process whose environment
// also holds each of vars ("NAME=value").
func findPodProcessWithEnv(pod string, vars []string, match func(args []string) bool) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		env = append(append([]byte{0}, env...), 0)
		if match(strings.Split(string(cmd), "\x00")) && hasAll(env, append(vars, "HOSTNAME="+pod)) {
			return pid
		}
	}
	return 0
}

// hasAll reports whether a NUL-framed environment block holds every var.
func hasAll(env []byte, vars []string) bool {
	for _, v := range vars {
		if !bytes.Contains(env, []byte("\x00"+v+"\x00")) {
			return false
		}
	}
	return true
}

// findPodPython is findPodProcess for a python process. The sandbox's bwrap
// processes carry the same command line after their own: the python among
// them is the one.
func findPodPython(pod string, match func(args []string) bool) int {
	return findPodProcess(pod, func(args []string) bool {
		return len(args) > 1 && strings.HasPrefix(filepath.Base(args[0]), "python") && match(args)
	})
}
