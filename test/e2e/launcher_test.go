package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/localcluster/paddleruntime"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// installLauncherRBAC installs the launcher's Role in a namespace and binds
// it to the namespace's default service account too: the tutorials' Jobs name
// no service account.
func installLauncherRBAC(t *testing.T, pj *client.Client, ns string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "launcher", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kube.DecodeManifests(data)
	if err != nil {
		t.Fatal(err)
	}
	applier, err := kube.NewApplier(pj.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := applier.Apply(context.Background(), o, ns); err != nil {
			t.Fatal(err)
		}
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "paddle-launcher-default", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "paddle-launcher"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}},
	}
	bindings := pj.Clientset().RbacV1().RoleBindings(ns)
	if _, err := bindings.Create(context.Background(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The tutorial's namespace is default, which outlives the test.
	t.Cleanup(func() { _ = bindings.Delete(context.Background(), binding.Name, metav1.DeleteOptions{}) })
}

// loadBatchJob reads a tutorial's batch/v1 Job (config/samples), with [YOUR_REPO] replaced and
// its hostPath volumes pointed at hostDir.
func loadBatchJob(t *testing.T, path, ns, hostDir string) *batchv1.Job {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.ReplaceAll(string(data), "[YOUR_REPO]", "paddlejob"))
	job := &batchv1.Job{}
	if err := yaml.UnmarshalStrict(data, job); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	job.Namespace = ns
	for i := range job.Spec.Template.Spec.Volumes {
		if v := &job.Spec.Template.Spec.Volumes[i]; v.HostPath != nil {
			v.HostPath.Path = hostDir
		}
	}
	return job
}

// runJob creates a batch/v1 Job and waits until it completes or fails.
func runJob(t *testing.T, pj *client.Client, job *batchv1.Job, timeout time.Duration) *batchv1.Job {
	t.Helper()
	jobs := pj.Clientset().BatchV1().Jobs(job.Namespace)
	start := time.Now()
	if _, err := jobs.Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := metav1.DeletePropagationBackground
		_ = jobs.Delete(context.Background(), job.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	})
	var got *batchv1.Job
	if _, ok := waitFor(timeout, func() (bool, string) {
		var err error
		if got, err = jobs.Get(context.Background(), job.Name, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				t.Logf("Job %s: %s after %s", job.Name, c.Type, time.Since(start).Round(100*time.Millisecond))
				return true, ""
			}
		}
		return false, ""
	}); ok {
		return got
	}
	dumpJobPods(t, pj, job)
	t.Fatalf("Job %s did not finish within %s", job.Name, timeout)
	return nil
}

func jobPodLogs(t *testing.T, pj *client.Client, job *batchv1.Job) map[string]string {
	t.Helper()
	pods, err := pj.Clientset().CoreV1().Pods(job.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		out[p.Name] = podLog(t, pj, job.Namespace, p.Name)
	}
	return out
}

func dumpJobPods(t *testing.T, pj *client.Client, job *batchv1.Job) {
	t.Helper()
	for name, log := range jobPodLogs(t, pj, job) {
		t.Logf("log of %s:\n%s", name, log)
	}
}

// The distributed-training tutorial's three-node Job (the three-node tutorial), as it writes it (its image
// [YOUR_REPO]/paddle:mypaddle with paddlejob as the repository, whose
// /root/start.sh is `paddlejob launch`), trains real Paddle: the launcher
// finds the other pods, numbers them by pod IP, and runs the wide & deep
// program as each pod's parameter server and trainer on the pod's share of
// the data `paddlejob data split` wrote to the shared volume.
func TestThreeNodeBatchJobWithTheLauncher(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	runThreeNodeBatchJob(t, pj, "default", "") // the tutorial's JOB_NAMESPACE is default
}

// runThreeNodeBatchJob runs seed 001's Job in ns, on the image's tag when
// tag is not "", asserts what Paddle reported and returns its processes'
// logs (node_<id>/server.log and train.log).
func runThreeNodeBatchJob(t *testing.T, pj *client.Client, ns, tag string) map[string]string {
	t.Helper()
	spec, mfs := threeNodeBatchJob(t, pj, ns, tag)
	return checkThreeNodeBatchJob(t, pj, runJob(t, pj, spec, jobTimeout), mfs)
}

// threeNodeBatchJob is seed 001's Job for ns (and the tag, when not ""),
// with its data split on the shared directory it returns.
func threeNodeBatchJob(t *testing.T, pj *client.Client, ns, tag string) (*batchv1.Job, string) {
	t.Helper()
	const name = "paddle-cluster-job"
	installLauncherRBAC(t, pj, ns)
	mfs := podsDir(t)
	train := filepath.Join(t.TempDir(), "train.txt")
	gen := exec.Command(paddlePython(t), filepath.Join(testenv.RepoRoot(), "examples/images/demo-wide-and-deep/wide_and_deep/ctr_data.py"), "--rows", "60000", "--out", train)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("generating the data: %v\n%s", err, out)
	}
	split := exec.Command(filepath.Join(binDir, "paddlejob"), "data", "split", "--input", train, "--out", mfs, "--job", name, "--parts", "3")
	if out, err := split.CombinedOutput(); err != nil {
		t.Fatalf("data split: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(mfs, name, "recommendation"), 0o755); err != nil { // TRAIN_CONFIG_DIR
		t.Fatal(err)
	}
	spec := loadBatchJob(t, "config/samples/seed001/job.yaml", ns, mfs)
	retarget(spec, ns, tag)
	return spec, mfs
}

// checkThreeNodeBatchJob asserts what the finished seed 001 Job's Paddle
// processes reported and returns their logs.
func checkThreeNodeBatchJob(t *testing.T, pj *client.Client, job *batchv1.Job, mfs string) map[string]string {
	t.Helper()
	name := job.Name
	logs := map[string]string{}
	if job.Status.Succeeded != 3 {
		dumpJobPods(t, pj, job)
		t.Fatalf("%d of 3 pods succeeded", job.Status.Succeeded)
	}

	// Each trainer id 0..2 once, each pod with its node_<id> logs, in which
	// Paddle reports the role and index the launcher gave it.
	output := filepath.Join(mfs, name, "output")
	for i := 0; i < 3; i++ {
		node := filepath.Join(output, fmt.Sprintf("node_%d", i))
		serverLog, trainLog := readFileOrEmpty(filepath.Join(node, "server.log")), readFileOrEmpty(filepath.Join(node, "train.log"))
		logs[fmt.Sprintf("node_%d/server.log", i)], logs[fmt.Sprintf("node_%d/train.log", i)] = serverLog, trainLog
		server := parsePSRole(t, "node_"+strconv.Itoa(i)+"/server.log", serverLog)
		if server.Role != "PSERVER" || server.Index != i || server.Count != 3 {
			t.Errorf("node_%d/server.log: Paddle says %s %d of %d, want PSERVER %d of 3", i, server.Role, server.Index, server.Count, i)
		}
		trainer := parsePSRole(t, "node_"+strconv.Itoa(i)+"/train.log", trainLog)
		if trainer.Role != "TRAINER" || trainer.Index != i || trainer.Count != 3 || trainer.Servers != 3 || !trainer.HasFinal {
			t.Errorf("node_%d/train.log: Paddle says %+v, want TRAINER %d of 3 with 3 servers, finished", i, trainer, i)
		}
		if i == 0 {
			t.Logf("trainer 0: test AUC %.4f (optimum %.4f)", trainer.AUC, trainer.Optimal)
			if trainer.AUC < trainer.Optimal-aucTolerance {
				t.Errorf("trainer 0's test AUC %.4f is more than %.2f below the optimum %.4f", trainer.AUC, aucTolerance, trainer.Optimal)
			}
		}
	}
	passes, _ := filepath.Glob(filepath.Join(output, "pass-*", "model.pdparams"))
	if len(passes) != 5 {
		t.Errorf("%d pass-* models under %s, want 5", len(passes), output)
	}
	// A restart of every pod's processes (--progress-deadline in the
	// image's start.sh) is the launcher recovering a Paddle hang: say it.
	restarts, _ := filepath.Glob(filepath.Join(output, "restarts", "*", "*", "requested"))
	for _, r := range restarts {
		t.Logf("the launchers restarted every pod's processes: %s", readFileOrEmpty(r))
	}
	if len(restarts) > 0 {
		for i := 0; i < 3; i++ {
			t.Logf("node_%d's trainer before the restart ended with:\n%s", i, tail(readFileOrEmpty(filepath.Join(output, fmt.Sprintf("node_%d", i), "train.0.log"))))
		}
	}
	return logs
}

// retarget points seed 001's Job at a namespace (its JOB_NAMESPACE too) and,
// when tag is not "", at its image's tag.
func retarget(job *batchv1.Job, ns, tag string) {
	for i := range job.Spec.Template.Spec.Containers {
		c := &job.Spec.Template.Spec.Containers[i]
		if tag != "" {
			c.Image = c.Image[:strings.LastIndex(c.Image, ":")] + ":" + tag
		}
		for j := range c.Env {
			if c.Env[j].Name == "JOB_NAMESPACE" {
				c.Env[j].Value = ns
			}
		}
	}
}

// readFileOrEmpty is a file's content, empty when it cannot be read.
func readFileOrEmpty(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// paddlePython is the pinned Paddle runtime's interpreter, which the local
// cluster installed.
func paddlePython(t *testing.T) string {
	t.Helper()
	rt, err := paddleruntime.Ensure(context.Background(), paddleruntime.Options{Dir: os.Getenv(paddleruntime.EnvDir)})
	if err != nil {
		t.Fatal(err)
	}
	return rt.Python
}

// The single-node tutorial's Job (a single-node Job): Paddle trains alone and writes its passes to
// the output volume.
func TestSingleNodeBatchJob(t *testing.T) {
	t.Parallel()
	runSingleNodeBatchJob(t, suiteClient)
}

// runSingleNodeBatchJob runs seed 000's Job in a namespace of its own on the
// cluster of pj.
func runSingleNodeBatchJob(t *testing.T, pj *client.Client) {
	ns := newNamespace(t, pj)
	out := podsDir(t)
	job := runJob(t, pj, loadBatchJob(t, "config/samples/seed000/job.yaml", ns, out), jobTimeout)
	if job.Status.Succeeded != 1 {
		dumpJobPods(t, pj, job)
		t.Fatalf("the quickstart Job did not succeed")
	}
	for pod, log := range jobPodLogs(t, pj, job) {
		r := parsePSRole(t, pod, log)
		if r.Role != "TRAINER" || r.Count != 1 || r.Servers != 0 || !r.HasFinal {
			t.Errorf("%s: Paddle says %+v, want a lone trainer that finished", pod, r)
		}
	}
	passes, _ := filepath.Glob(filepath.Join(out, "pass-*", "model.pdparams"))
	if len(passes) != 3 {
		t.Errorf("%d passes written to the output volume, want 3", len(passes))
	}
}

// A peer that never runs: the launcher gives up naming it.
func TestLauncherTimesOutNamingTheMissingPeer(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	ns := newNamespace(t, pj)
	installLauncherRBAC(t, pj, ns)
	const name = "short"
	// A third pod of the Job that can never be scheduled.
	stuck := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "short-stuck", Namespace: ns, Labels: map[string]string{"job-name": name}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"no-such-node": "true"},
			Containers:   []corev1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"true"}}},
		},
	}
	if _, err := pj.Clientset().CoreV1().Pods(ns).Create(context.Background(), stuck, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	two, zero := int32(2), int32(0)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{Parallelism: &two, Completions: &two, BackoffLimit: &zero, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "launcher", Image: "paddlejob/launcher",
				Args: []string{"--parallelism=3", "--timeout=8s", "--pserver-cmd=sleep 60", "--trainer-cmd=true"},
				Env: []corev1.EnvVar{
					{Name: "JOB_NAME", Value: name}, {Name: "JOB_NAMESPACE", Value: ns}, {Name: "JOB_PATH", Value: "/tmp"},
					{Name: "CONF_PADDLE_NIC", Value: "lo"}, {Name: "CONF_PADDLE_PORT", Value: "7164"},
					{Name: "CONF_PADDLE_PORTS_NUM", Value: "1"}, {Name: "CONF_PADDLE_PORTS_NUM_SPARSE", Value: "1"},
					{Name: "CONF_PADDLE_GRADIENT_NUM", Value: "3"},
				},
			}},
		}}},
	}
	done := runJob(t, pj, job, jobTimeout)
	if done.Status.Failed == 0 {
		dumpJobPods(t, pj, done)
		t.Fatalf("the launcher did not fail without its third peer")
	}
	for pod, log := range jobPodLogs(t, pj, done) {
		if pod == stuck.Name {
			continue
		}
		if !strings.Contains(log, "short-stuck (Pending)") {
			t.Errorf("%s's error does not name the missing peer:\n%s", pod, log)
		}
	}
}

// paddlejob submit with the paddle.job SDK's word2vec example parameters runs on the local
// cluster (without its CephFS volume, which no local node mounts): real
// Paddle with 3 parameter servers and 3 trainers.
func TestSubmitWord2vecExample(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	ns := newNamespace(t, pj)
	cmd := exec.Command(filepath.Join(binDir, "paddlejob"), "submit", "--kubeconfig", cluster.Kubeconfig(), "-n", ns,
		"--name", "paddle-job", "--image", "yancey1989/paddle-job", "--entry-point", "python train.py",
		"--cpu", "3", "--memory", "8G", "--pservers", "3", "--wait", "--timeout", jobTimeout.String(),
		// What recoverable gives the other PS jobs: a Paddle crash or hang restarts the job.
		"--restart-policy", "ExitCode", "--progress-deadline-seconds", strconv.Itoa(progressDeadline))
	out, err := cmd.CombinedOutput()
	t.Logf("paddlejob submit:\n%s", out)
	if err != nil {
		dumpJob(t, pj, ns, "paddle-job")
		t.Fatalf("submit: %v", err)
	}
	logRestarts(t, pj, ns, "paddle-job")
	job, err := pj.Get(context.Background(), ns, "paddle-job")
	if err != nil {
		t.Fatal(err)
	}
	if job.Spec.PS.Replicas != 3 || job.Spec.Worker.Replicas != 3 {
		t.Errorf("pservers %d, trainers %d; want 3 and the default 3", job.Spec.PS.Replicas, job.Spec.Worker.Replicas)
	}
	env, err := resolvedEnvOf(pj, ns, "paddle-job-worker-2")
	if err != nil {
		t.Fatal(err)
	}
	if env["TRAINER_ID"] != "2" || env["TRAINERS"] != "3" {
		t.Errorf("TRAINER_ID %q, TRAINERS %q", env["TRAINER_ID"], env["TRAINERS"])
	}
	checkPSJob(t, job, workerLogs(jobLogs(t, pj, job)))
}

func TestSubmitRejectsBadValuesNamingFlagAndRule(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(filepath.Join(binDir, "paddlejob"), "submit", "--kubeconfig", cluster.Kubeconfig(),
		"--name", "MyJob", "--image", "x", "--entry-point", "python train.py", "--cpu", "0", "--memory", "12X")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("submit accepted bad values:\n%s", out)
	}
	for _, want := range []string{`--name "MyJob": must be lowercase`, "--cpu 0: must be at least 1", `--memory "12X": must be a plain integer with one of the suffixes E, P, T, G, M, K`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
}

// resolvedEnvOf resolves a pod's first container's environment against its
// job's ConfigMaps, as the node resolved it when starting the process.
func resolvedEnvOf(pj *client.Client, ns, pod string) (map[string]string, error) {
	ctx := context.Background()
	p, err := pj.Clientset().CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	cms, err := pj.Clientset().CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	data := map[string]map[string]string{}
	for _, cm := range cms.Items {
		data[cm.Name] = cm.Data
	}
	return testutil.ResolveEnv(p, &p.Spec.Containers[0], data)
}

// Installed as kubectl-paddlejob, the CLI is a kubectl plugin that talks to
// kubectl's cluster.
func TestKubectlPlugin(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed for this test (it is installed on the project's machines): %v", err)
	}
	pluginDir := t.TempDir()
	if err := os.Symlink(filepath.Join(binDir, "paddlejob"), filepath.Join(pluginDir, "kubectl-paddlejob")); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, pj)
	job := loadJob(t, "examples/jobs/resnet.yaml")
	job.Namespace = ns
	createJob(t, pj, job)
	cmd := exec.Command(kubectl, "paddlejob", "get", "-n", ns)
	cmd.Env = append(os.Environ(), "PATH="+pluginDir+":"+os.Getenv("PATH"), "KUBECONFIG="+cluster.Kubeconfig())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "resnet") || !strings.Contains(string(out), "WORKER") {
		t.Fatalf("kubectl paddlejob get: %v\n%s", err, out)
	}
}

// kubectl users see the admission webhook's rejections and warnings.
func TestKubectlSeesWebhookRejectionsAndWarnings(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed for this test (it is installed on the project's machines): %v", err)
	}
	ns := newNamespace(t, pj)
	run := func(args ...string) (string, error) {
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", cluster.Kubeconfig(), "-n", ns}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// paddle-operator's example 5 spells cleanPodPolicy the old way: accepted, with a warning.
	out, err := run("create", "-f", filepath.Join(testenv.RepoRoot(), "config/samples/seed004/example-5-data-demo.yaml"))
	if err != nil || !strings.Contains(out, "Warning: spec.cleanPolicy is deprecated") {
		t.Errorf("kubectl create of example 5: %v\n%s", err, out)
	}
	bad := strings.Replace(mustRead(t, "config/samples/seed004/example-2-resnet.yaml"), "- name: paddle", "- name: wait-for-endpoints", 1)
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run("create", "-f", path)
	if err == nil || !strings.Contains(out, `spec.worker.template.spec.containers[0].name: Invalid value: "wait-for-endpoints": is reserved`) {
		t.Errorf("kubectl create of a job using a reserved name: %v\n%s", err, out)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
