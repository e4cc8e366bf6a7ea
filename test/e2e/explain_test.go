package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/fsutil"
	"github.com/paddlejob/paddlejob/internal/paddlefailure"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// explainedProgramDir is where the pods of TestFailuresExplainThemselves
// find the programs whose real failures the operator's table was made from
// (internal/paddlefailure/testdata/programs).
const explainedProgramDir = "/program"

// Mistakes a user makes, each run as a real PaddleJob on Paddle 3.0.0:
// the job fails, and its Failed condition (and the SDK, and the failed
// container's terminated state) says why and what to do — a collective
// program given parameter servers, a parameter-server program given none,
// a module the image lacks, a GPU device asked of the CPU build, Paddle's
// GEO-SGD bug with sparse_embedding, an output volume the node mounts
// read-only.
func TestFailuresExplainThemselves(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	output := readOnlyHostDir(t)
	for _, tc := range []struct {
		name, program string
		ps, workers   int32
		env           map[string]string
		output        bool
		wantID        string
		// words the explanation holds, and the failed pod.
		words   []string
		wantPod string
	}{
		{name: "a collective program in a parameter-server job", program: "collective_mnist.py", ps: 1, workers: 2,
			wantID: "collective-program-in-ps-job", words: []string{"Remove spec.ps"}, wantPod: "ps-0"},
		{name: "a parameter-server program in a collective job", program: "ps_ctr.py", workers: 2,
			wantID: "ps-program-in-collective-job", words: []string{"Add spec.ps"}, wantPod: "worker-"},
		{name: "a module the image does not have", program: "ps_ctr_auc.py", ps: 1, workers: 1,
			wantID: "missing-module", words: []string{"module sklearn", "build context"}},
		{name: "a GPU device on the CPU build", program: "gpu_resnet.py", workers: 2,
			wantID: "gpu-on-cpu-build", words: []string{"paddle.is_compiled_with_cuda()"}, wantPod: "worker-"},
		{name: "Paddle's GEO-SGD with sparse_embedding", program: "geo_ctr.py", ps: 1, workers: 2,
			wantID: "geo-sparse-embedding", words: []string{"is_sparse=True"}, wantPod: "worker-"},
		{name: "an output volume the node mounts read-only", program: "save_model.py", workers: 1,
			env: map[string]string{"OUTPUT_DIR": "/output/run-1"}, output: true,
			wantID: "read-only-file-system", words: []string{"/output/run-1", "hostPath volume output (" + output + ") at /output", "paddlejob up --host-path-rw " + output},
			wantPod: "worker-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := explainedJob(t, tc.program, tc.ps, tc.workers, tc.env)
			if tc.output {
				mountEvery(job, corev1.Volume{Name: "output", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: output}}}, "/output", false)
			}
			done := runToEnd(t, pj, job)
			c := meta.FindStatusCondition(done.Status.Conditions, paddlev1.JobFailed)
			if done.Status.Phase != paddlev1.PaddleJobFailed || c == nil {
				dumpJob(t, pj, done.Namespace, done.Name)
				t.Fatalf("PaddleJob %s ended %s, want Failed", done.Name, done.Status.Phase)
			}
			t.Logf("Failed: %s", c.Message)
			e := client.FailureExplanation(done)
			if e == nil || e.ID != tc.wantID || paddlefailure.Parse(c.Message) == nil {
				t.Fatalf("the Failed condition explains %+v, want %s:\n%s", e, tc.wantID, c.Message)
			}
			for _, w := range tc.words {
				if !strings.Contains(e.Cause+" "+e.Fix, w) {
					t.Errorf("the explanation does not say %q:\n%s", w, c.Message)
				}
			}
			if want := done.Name + "-" + tc.wantPod; tc.wantPod != "" && !strings.HasPrefix(c.Message, "pod "+want) {
				t.Errorf("the Failed condition names another pod than %s*:\n%s", want, c.Message)
			}
			checkFailedContainerKeptItsLog(t, pj, done, tc.wantID)
		})
	}
}

// explainedJob runs a program of internal/paddlefailure/testdata/programs
// in every pod, on the Paddle 3.0.0 image.
func explainedJob(t *testing.T, program string, ps, workers int32, env map[string]string) *paddlev1.PaddleJob {
	t.Helper()
	dir := podsDir(t)
	if err := fsutil.CopyTree(filepath.Join(testenv.RepoRoot(), "internal/paddlefailure/testdata/programs"), dir); err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(strings.ReplaceAll(program, "_", "-"), ".py")
	b := testutil.MakePaddleJob(name, "").Workers(workers)
	roles := []paddlev1.ReplicaType{paddlev1.ReplicaWorker}
	if ps > 0 {
		b = b.PS(ps)
		roles = append(roles, paddlev1.ReplicaPS)
	}
	b = b.Image("paddlepaddle/paddle:3.0.0")
	for _, rt := range roles {
		b = b.Command(rt, "python3", explainedProgramDir+"/"+program)
		for k, v := range env {
			b = b.Env(rt, k, v)
		}
	}
	job := b.Obj()
	mountEvery(job, corev1.Volume{Name: "program", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}, explainedProgramDir, true)
	return job
}

// mountEvery mounts a volume in the first container of every role the job has.
func mountEvery(job *paddlev1.PaddleJob, v corev1.Volume, path string, readOnly bool) {
	for _, rt := range paddlev1.ReplicaTypes {
		rs := job.Spec.Replicas(rt)
		if rs == nil {
			continue
		}
		spec := &rs.Template.Spec
		spec.Volumes = append(spec.Volumes, v)
		spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: path, ReadOnly: readOnly})
	}
}

// readOnlyHostParent is where readOnlyHostDir makes its directories, in the
// user's cache, where the project keeps its builds: the suite's cluster lists
// it read-only (up --host-path-ro).
func readOnlyHostParent() string {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = filepath.Join(os.TempDir(), "no-cache")
	}
	return filepath.Join(cache, "paddlejob", "e2e")
}

// readOnlyHostDir is a directory outside the ones the suite's cluster lets
// pods write (the temporary directory: HostPathRW), so the node mounts it
// read-only, as it mounts a user's directory that up --host-path-ro names
// and --host-path-rw does not.
func readOnlyHostDir(t *testing.T) string {
	t.Helper()
	parent := readOnlyHostParent()
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(parent, "read-only-output-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Writable by every uid but for the mount: a root node's pods are not
	// the host's root, so only the read-only mount refuses the write.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if rel, err := filepath.Rel(os.TempDir(), dir); err == nil && !strings.HasPrefix(rel, "..") {
		t.Fatalf("%s is inside the temporary directory, which the suite's cluster lets pods write: the user's cache must lie outside %s", dir, os.TempDir())
	}
	return dir
}

// checkFailedContainerKeptItsLog asserts that a failed pod's container kept
// the end of its log (the operator's FallbackToLogsOnError, which the node
// honours) and that the SDK explains it as the job's condition does.
func checkFailedContainerKeptItsLog(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob, wantID string) {
	t.Helper()
	pods, err := pj.Pods(context.Background(), job.Namespace, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
				t.Errorf("%s/%s: terminationMessagePolicy %q, want %s", p.Name, c.Name, c.TerminationMessagePolicy, corev1.TerminationMessageFallbackToLogsOnError)
			}
		}
	}
	for _, f := range client.ContainerFailures(pods) {
		if f.Explanation != nil && f.Explanation.ID == wantID && f.LastLines != "" {
			return
		}
	}
	t.Errorf("no failed container of %s kept the end of its log, explained as %s: %+v", job.Name, wantID, client.ContainerFailures(pods))
}
