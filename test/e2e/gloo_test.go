package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/fsutil"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	"github.com/paddlejob/paddlejob/pkg/client"
	"github.com/paddlejob/paddlejob/python"
)

// Each Gloo level, as Paddle's PaddleCloudRoleMaker reports it to a static
// parameter-server program that calls fleet.util (test/e2e/testdata/gloo):
// at 1 and 2 the workers' barrier, all-reduce and all-gather go over Gloo
// (each worker adds its rank + 1 and gets the sum of both); at 0 Paddle
// says Gloo is not initialized and hands each process its own value back,
// also to the processes Paddle's launcher starts. The groups level 2 asks
// for, servers and all processes, Paddle 2.6 and 3.0 build only with the
// file-system rendezvous: with a directory every pod mounts
// (PADDLE_GLOO_FS_PATH in the templates) the operator uses it, and the two
// servers all-reduce among themselves and all four processes among all;
// without one the operator gives the job the HTTP store, served beside ps-0,
// where those groups do not exist: the servers are off Gloo (level 0, its
// warning and their own values), and the admission webhook warns.
func TestGlooLevels(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	for _, tc := range []struct {
		name      string
		level     int32
		launcher  bool
		sharedDir bool
	}{
		{name: "withGloo 0", level: 0},
		{name: "withGloo 1", level: 1},
		{name: "withGloo 2", level: 2},
		{name: "withGloo 2 over a shared directory", level: 2, sharedDir: true},
		{name: "withGloo 0 under paddle.distributed.launch", level: 0, launcher: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := glooJob(t, tc.level)
			dir := ""
			if tc.sharedDir {
				dir = shareGlooDirectory(t, job)
			}
			logDir := ""
			if tc.launcher {
				logDir = launchEveryPod(t, job)
				for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
					c := &job.Spec.Replicas(rt).Template.Spec.Containers[0]
					c.Command = []string{"python3", "-m", "paddle.distributed.launch", glooProgramPath}
				}
			}
			job.Namespace = newNamespace(t, pj)
			warned := strings.Contains(strings.Join(admissionWarnings(t, pj, job), "\n"), glooLevelTwoWarning)
			if want := tc.level == 2 && !tc.sharedDir; warned != want {
				t.Errorf("admission warned %q: %v, want %v", glooLevelTwoWarning, warned, want)
			}
			done, logs := runInNamespace(t, pj, job)
			if tc.launcher {
				logs = launchedProcessLogs(t, done, logDir)
			}
			for pod, log := range logs {
				rt, index := roleOf(t, done, pod)
				checkGlooReport(t, pod, rt, index, tc.level, tc.sharedDir, parseGlooReport(log), log)
			}
			if tc.sharedDir {
				checkGlooFiles(t, pj, dir, done)
			}
		})
	}
}

// glooLevelTwoWarning is the start of the admission webhook's warning about
// withGloo 2 over the HTTP store.
const glooLevelTwoWarning = "spec.withGloo is 2 but no container of spec.ps or spec.worker sets PADDLE_GLOO_FS_PATH"

// glooSharedPath is where the pods of shareGlooDirectory mount the directory.
const glooSharedPath = "/gloo-shared"

// shareGlooDirectory mounts one host directory read-write in every pod of
// the job, as a ReadWriteMany volume would be, and names it
// PADDLE_GLOO_FS_PATH; it returns the host directory.
func shareGlooDirectory(t *testing.T, job *paddlev1.PaddleJob) string {
	t.Helper()
	dir := podsDir(t)
	for _, c := range mountHostDir(job, "gloo", dir, glooSharedPath, false) {
		c.Env = append(c.Env, corev1.EnvVar{Name: "PADDLE_GLOO_FS_PATH", Value: glooSharedPath})
	}
	return dir
}

// checkGlooFiles asserts that Paddle's file-system rendezvous ran in the
// shared directory: in each group one store per attempt of the job (one,
// plus one per restart), the last attempt's named by the pods' SYS_JOB_ID
// and holding one file per rank.
func checkGlooFiles(t *testing.T, pj *client.Client, dir string, job *paddlev1.PaddleJob) {
	t.Helper()
	pod, err := pj.Clientset().CoreV1().Pods(job.Namespace).Get(context.Background(), paddlev1.PodName(job.Name, paddlev1.ReplicaWorker, 0), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prefix := ""
	for _, e := range pod.Spec.Containers[0].Env {
		if e.Name == "SYS_JOB_ID" {
			prefix = e.Value
		}
	}
	for group, ranks := range map[string]int{"WORKER": 2, "SERVER": 2, "ALL": 4} {
		entries, err := os.ReadDir(filepath.Join(dir, group))
		found := slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == prefix })
		if err != nil || len(entries) != int(job.Status.RestartCount)+1 || !found {
			t.Errorf("%s/%s holds %v (%v), want a store per attempt (restarts: %d), the last the pods' SYS_JOB_ID %q", dir, group, entries, err, job.Status.RestartCount, prefix)
			continue
		}
		files, _ := os.ReadDir(filepath.Join(dir, group, prefix))
		if len(files) != ranks {
			t.Errorf("%s/%s/%s holds %d files, want one per rank: %d", dir, group, prefix, len(files), ranks)
		}
	}
}

// admissionWarnings are the warnings the API server (the operator's
// admission webhook) answers a server-side dry run of creating the job with.
func admissionWarnings(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) []string {
	t.Helper()
	var got warningLog
	cfg := rest.CopyConfig(pj.Config())
	cfg.WarningHandler = &got
	c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: kube.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), job.DeepCopy(), ctrlclient.DryRunAll); err != nil {
		t.Fatalf("dry run of creating PaddleJob %s/%s: %v", job.Namespace, job.Name, err)
	}
	return got.msgs
}

// warningLog collects the warnings of a client's requests.
type warningLog struct{ msgs []string }

func (w *warningLog) HandleWarningHeader(_ int, _ string, msg string) { w.msgs = append(w.msgs, msg) }

// glooProgramPath is where the pods of glooJob find the program.
const glooProgramPath = "/gloo/gloo_check.py"

// glooJob is 2 pservers and 2 workers at a Gloo level running the Gloo
// program from a host directory: the program and the SDK beside it.
func glooJob(t *testing.T, level int32) *paddlev1.PaddleJob {
	t.Helper()
	dir := podsDir(t)
	if err := fsutil.CopyTree(filepath.Join(testenv.RepoRoot(), "test/e2e/testdata/gloo"), dir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "paddlejob"), python.SDK()); err != nil {
		t.Fatal(err)
	}
	job := testutil.MakePaddleJob("gloo", "").PS(2).Workers(2).WithGloo(level).
		Image("registry.baidubce.com/paddle-operator/demo-wide-and-deep:v1").Obj()
	for _, c := range mountHostDir(job, "program", dir, filepath.Dir(glooProgramPath), true) {
		c.Command = []string{"python3", glooProgramPath}
	}
	return job
}

// launchedProcessLogs reads, for each pod of a job whose pods ran Paddle's
// launcher (launchEveryPod), the log of the one process its launcher
// started: serverlog.0 on a pserver, workerlog.0 on a worker.
func launchedProcessLogs(t *testing.T, job *paddlev1.PaddleJob, logDir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
			pod := paddlev1.PodName(job.Name, rt, i)
			want := "workerlog.0"
			if rt == paddlev1.ReplicaPS {
				want = "serverlog.0"
			}
			servers, _ := filepath.Glob(filepath.Join(logDir, pod, "serverlog.*"))
			workers, _ := filepath.Glob(filepath.Join(logDir, pod, "workerlog.*"))
			files := append(servers, workers...)
			if len(files) != 1 || filepath.Base(files[0]) != want {
				t.Errorf("%s's launcher started %v, want only %s", pod, files, want)
				continue
			}
			out[pod] = mustReadAbs(t, files[0])
		}
	}
	return out
}

// glooReport is what the Gloo program printed: its role line's fields and,
// per fleet.util call ("worker all_reduce", "all barrier", ...), the value
// Paddle returned, the warning it gave, or the exception it raised.
type glooReport struct {
	Role         string
	Index, Level int
	Results      map[string]string
	Warnings     map[string]string
	Failures     map[string]string
	Done         bool
}

var (
	glooRoleLine = regexp.MustCompile(`(?m)^gloo: role=(\w+) index=(\d+) .* PADDLE_WITH_GLOO=(\d*)$`)
	glooCallLine = regexp.MustCompile(`(?m)^gloo: (\w+ \w+) (=|warned:|failed:) (.*)$`)
)

func parseGlooReport(log string) glooReport {
	r := glooReport{Index: -1, Level: -1, Results: map[string]string{}, Warnings: map[string]string{}, Failures: map[string]string{}}
	if m := glooRoleLine.FindStringSubmatch(log); m != nil {
		r.Role = m[1]
		r.Index, _ = strconv.Atoi(m[2])
		r.Level, _ = strconv.Atoi(m[3])
	}
	for _, m := range glooCallLine.FindAllStringSubmatch(log, -1) {
		switch m[2] {
		case "=":
			r.Results[m[1]] = m[3]
		case "warned:":
			r.Warnings[m[1]] = m[3]
		case "failed:":
			r.Failures[m[1]] = m[3]
		}
	}
	r.Done = strings.Contains(log, "gloo: trainer done") || strings.Contains(log, "gloo: server calls done")
	return r
}

// Paddle's words (paddle/distributed/fleet/base/role_maker.py): a call on
// a Gloo context it never initialised, and a call on a group it did not
// build.
const (
	glooNotInitialized = "gloo is not initialized, will not communicator with other nodes"
	glooNoGroup        = "AttributeError: 'NoneType' object has no attribute 'barrier'"
)

// checkGlooReport asserts one process's report at a Gloo level.
func checkGlooReport(t *testing.T, pod string, rt paddlev1.ReplicaType, index int, level int32, overFiles bool, r glooReport, log string) {
	t.Helper()
	role, calls := "TRAINER", []string{"worker barrier", "worker all_reduce", "worker all_gather", "all barrier", "all all_reduce"}
	if rt == paddlev1.ReplicaPS {
		role, calls = "PSERVER", []string{"server barrier", "server all_reduce", "all barrier", "all all_reduce"}
	}
	if rt == paddlev1.ReplicaPS && !overFiles {
		// Over the HTTP store the servers are off Gloo: the store
		// container serves it, and Paddle builds no group for them there.
		level = 0
	}
	if r.Role != role || r.Index != index || r.Level != int(level) || !r.Done {
		t.Errorf("%s: Paddle says %s %d with PADDLE_WITH_GLOO=%d (done: %v), want %s %d with %d:\n%s", pod, r.Role, r.Index, r.Level, r.Done, role, index, level, tail(log))
		return
	}
	// The value a process contributes: its rank + 1 in the group.
	own := strconv.Itoa(index + 1)
	for _, call := range calls {
		group, _, _ := strings.Cut(call, " ")
		var want, got string
		switch {
		case level == 0:
			// No Gloo: Paddle warns and returns the process's own value.
			if w := r.Warnings[call]; w != glooNotInitialized {
				t.Errorf("%s: %s warned %q, want Paddle's %q", pod, call, w, glooNotInitialized)
			}
			want, got = "None", r.Results[call]
			if strings.HasSuffix(call, "all_reduce") || strings.HasSuffix(call, "all_gather") {
				want = "[" + own + "]"
				if rt == paddlev1.ReplicaPS && group == "all" {
					// Among all processes a server's rank follows the 2 workers'.
					want = "[" + strconv.Itoa(index+3) + "]"
				}
			}
		case group == "worker":
			// Over Gloo: only both workers' values make these.
			want, got = map[string]string{"worker barrier": "None", "worker all_reduce": "[3]", "worker all_gather": "[1, 2]"}[call], r.Results[call]
			if w, ok := r.Warnings[call]; ok {
				t.Errorf("%s: %s warned %q", pod, call, w)
			}
		case overFiles && level == 2:
			// Over files Paddle builds both: the servers' values make the
			// servers' sum (1 + 2), all four processes' the sum among all
			// (workers 1 + 2, servers 3 + 4).
			want, got = map[string]string{"server barrier": "None", "server all_reduce": "[3]", "all barrier": "None", "all all_reduce": "[10]"}[call], r.Results[call]
			if f, ok := r.Failures[call]; ok {
				t.Errorf("%s: %s failed: %s", pod, call, f)
			}
		default:
			// The server and all groups: Paddle's HTTP rendezvous builds
			// neither, at level 1 as at 2.
			want, got = glooNoGroup, r.Failures[call]
		}
		if got != want {
			t.Errorf("%s at withGloo %d: %s gave %q, want %q:\n%s", pod, level, call, got, want, tail(log))
		}
	}
}
