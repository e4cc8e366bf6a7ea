package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/fsutil"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	"github.com/paddlejob/paddlejob/pkg/client"
	"github.com/paddlejob/paddlejob/python"
)

// aucTolerance is how close to the data's optimum the wide & deep example
// must get.
const aucTolerance = 0.02

// jobLogs reads the log of every pod of a job that still exists.
func jobLogs(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) map[string]string {
	t.Helper()
	pods, err := pj.Pods(context.Background(), job.Namespace, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods {
		out[p.Name] = podLog(t, pj, job.Namespace, p.Name)
	}
	return out
}

// checkPSJob asserts what the processes of a completed wide & deep job
// reported through Paddle: each pserver its index among all servers, each
// trainer its index among all trainers and the servers it sees, and trainer
// 0's final test AUC near the optimum. logs holds the pods still there
// (pservers are stopped when the job completes: pass their logs, read
// before, or none).
func checkPSJob(t *testing.T, job *paddlev1.PaddleJob, logs map[string]string) psRole {
	t.Helper()
	servers, trainers := int(job.Spec.PS.Replicas), int(job.Spec.Worker.Replicas)
	var first psRole
	for pod, log := range logs {
		rt, index := roleOf(t, job, pod)
		r := parsePSRole(t, pod, log)
		switch rt {
		case paddlev1.ReplicaPS:
			if r.Role != "PSERVER" || r.Index != index || r.Count != servers {
				t.Errorf("%s: Paddle says %s %d of %d, want PSERVER %d of %d", pod, r.Role, r.Index, r.Count, index, servers)
			}
		case paddlev1.ReplicaWorker:
			if r.Role != "TRAINER" || r.Index != index || r.Count != trainers || r.Servers != servers {
				t.Errorf("%s: Paddle says %s %d of %d with %d servers, want TRAINER %d of %d with %d", pod, r.Role, r.Index, r.Count, r.Servers, index, trainers, servers)
			}
			if !r.HasFinal {
				t.Errorf("%s did not finish training:\n%s", pod, tail(log))
			}
			if index == 0 {
				first = r
			}
		}
	}
	t.Logf("trainer 0: test AUC %.4f, the data's optimum %.4f", first.AUC, first.Optimal)
	if first.AUC < first.Optimal-aucTolerance {
		t.Errorf("trainer 0's test AUC %.4f is more than %.2f below the optimum %.4f", first.AUC, aucTolerance, first.Optimal)
	}
	return first
}

// checkCollectiveJob asserts what the ranks of a completed ResNet job
// reported through Paddle: ranks 0..n-1, each with world size n, and a
// falling loss.
func checkCollectiveJob(t *testing.T, job *paddlev1.PaddleJob, logs map[string]string) collectiveReport {
	t.Helper()
	n := int(job.Spec.Worker.Replicas)
	ranks := ranksReported(t, logs)
	for rank := 0; rank < n; rank++ {
		if ranks[rank] != n {
			t.Errorf("rank %d reported world size %d, want %d (ranks: %v)", rank, ranks[rank], n, ranks)
		}
	}
	if len(ranks) != n {
		t.Errorf("ranks reported: %v, want 0..%d", ranks, n-1)
	}
	rep := parseCollective(t, job.Name+"-worker-0", logs[job.Name+"-worker-0"])
	if len(rep.Epochs) == 0 || rep.FinalLoss >= rep.Epochs[0].Loss {
		t.Errorf("the loss did not fall: epochs %+v, final %.4f", rep.Epochs, rep.FinalLoss)
	}
	t.Logf("loss %.4f after epoch 1, %.4f at the end; test accuracy %.3f", rep.Epochs[0].Loss, rep.FinalLoss, rep.Accuracy)
	return rep
}

// roleOf is a pod's role and index from its name.
func roleOf(t *testing.T, job *paddlev1.PaddleJob, pod string) (paddlev1.ReplicaType, int) {
	t.Helper()
	for _, rt := range paddlev1.ReplicaTypes {
		for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
			if paddlev1.PodName(job.Name, rt, i) == pod {
				return rt, i
			}
		}
	}
	t.Fatalf("%s is no pod of %s", pod, job.Name)
	return "", 0
}

// runReadingLogs runs a job to completion in a new namespace and returns the
// logs of all its pods, followed while they ran: its parameter servers,
// which never exit on their own, are stopped and deleted when it completes,
// and cleanPodPolicy may delete the rest.
func runReadingLogs(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) (*paddlev1.PaddleJob, map[string]string) {
	t.Helper()
	job.Namespace = newNamespace(t, pj)
	return runInNamespace(t, pj, job)
}

// Every example of paddle-operator's documentation (seed 004), as written, completes on the local
// cluster with real Paddle. What a local-cluster user does differently:
// example 2's and 3's GPUs are the node's emulated ones and example 3's
// nodeSelector matches the node's label (the suite starts the cluster with
// --gpus 4 --node-labels accelerator=nvidia-tesla-p100); example 5's
// PersistentVolume is a hostPath holding the code where the example's is an NFS
// export. Example 4 needs Volcano: see the scheduling tests. Like every PS
// job of the suite, the PS examples get the restart policy and progress
// deadline a production user adds (recoverable).
func TestPaddleOperatorExamplesRunAsWritten(t *testing.T) {
	t.Parallel()
	runPaddleOperatorExamples(t, suiteClient)
}

// runPaddleOperatorExamples runs seed 004's examples 1, 2, 3 and 5 on the
// cluster of pj, one after the other.
func runPaddleOperatorExamples(t *testing.T, pj *client.Client) {
	t.Run("1 wide and deep, PS with Gloo", func(t *testing.T) {
		job := loadJob(t, "config/samples/seed004/example-1-wide-and-deep.yaml")
		done, logs := runReadingLogs(t, pj, job)
		checkPSJob(t, done, logs)
		// cleanPodPolicy Never keeps the finished workers; the pservers,
		// running when the job completed, are stopped.
		waitPods(t, pj, done.Namespace, done.Name, "wide-ande-deep-worker-0", "wide-ande-deep-worker-1")
	})
	t.Run("2 resnet, collective with the launcher", func(t *testing.T) {
		job := loadJob(t, "config/samples/seed004/example-2-resnet.yaml")
		done, logs := runReadingLogs(t, pj, job)
		checkCollectiveJob(t, done, logs)
		for pod := range logs {
			if !strings.Contains(logs[pod], "LAUNCH INFO") {
				t.Errorf("%s did not run Paddle's launcher:\n%s", pod, tail(logs[pod]))
			}
		}
	})
	t.Run("3 wide and deep, Service intranet, GPUs and a nodeSelector", func(t *testing.T) {
		job := loadJob(t, "config/samples/seed004/example-3-wide-and-deep-gpu-nodeselector.yaml")
		done, logs := runReadingLogs(t, pj, job)
		first := checkPSJob(t, done, logs)
		if !strings.Contains(first.PServerList, "wide-ande-deep-ps-0.wide-ande-deep:") {
			t.Errorf("the trainer's pservers are %q, want DNS names", first.PServerList)
		}
		waitNoPods(t, pj, done.Namespace, done.Name) // cleanPodPolicy OnCompletion
	})
	t.Run("5 data on a PersistentVolume", func(t *testing.T) {
		ns := newNamespace(t, pj)
		code := podsDir(t)
		// The volume holds what the image's /wide_and_deep holds: the example
		// and the SDK its Dockerfile copies beside it.
		if err := fsutil.CopyTree(filepath.Join(testenv.RepoRoot(), "examples/images/demo-wide-and-deep/wide_and_deep"), filepath.Join(code, "wide_and_deep")); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(filepath.Join(code, "wide_and_deep", "paddlejob"), python.SDK()); err != nil {
			t.Fatal(err)
		}
		applyLocalPV(t, pj, ns, code)
		job := loadJob(t, "config/samples/seed004/example-5-data-demo.yaml")
		job.Namespace = ns
		done, logs := runInNamespace(t, pj, job)
		checkPSJob(t, done, logs)
		// The code ran from the volume: its model went there too.
		if models, _ := filepath.Glob(filepath.Join(code, "wide_and_deep", "output", "pass-*")); len(models) == 0 {
			t.Errorf("no pass-* models on the volume")
		}
	})
}

// applyLocalPV creates the examples' PersistentVolume and claim in ns, the
// volume a hostPath at dir instead of the examples' NFS export, the claim as
// the examples write it.
func applyLocalPV(t *testing.T, pj *client.Client, ns, dir string) {
	t.Helper()
	docs := strings.Split(mustRead(t, "config/samples/seed004/pv-pvc.yaml"), "\n---")
	pv := &corev1.PersistentVolume{}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), pv); err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), pvc); err != nil {
		t.Fatal(err)
	}
	pv.Name = ns + "-" + pv.Name // volumes are cluster-wide
	pv.Spec.NFS, pv.Spec.MountOptions = nil, nil
	pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: dir}
	pvc.Namespace, pvc.Spec.VolumeName = ns, pv.Name
	ctx := context.Background()
	if _, err := pj.Clientset().CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pj.Clientset().CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	if _, err := pj.Clientset().CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// runInNamespace runs a job in the namespace it names.
func runInNamespace(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) (*paddlev1.PaddleJob, map[string]string) {
	t.Helper()
	start := time.Now()
	createJob(t, pj, job)
	return awaitCompletion(t, pj, job, start)
}

// awaitCompletion follows a created job's logs until it completes and
// returns the finished job and its pods' logs; a job that fails or times out
// fails the test with the job's state.
func awaitCompletion(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob, start time.Time) (*paddlev1.PaddleJob, map[string]string) {
	t.Helper()
	logs := followLogs(t, pj, job, podNames(job)...)
	done, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		dumpJob(t, pj, job.Namespace, job.Name)
		t.Fatal(err)
	}
	t.Logf("PaddleJob %s/%s %s in %s", job.Namespace, job.Name, done.Status.Phase, time.Since(start).Round(100*time.Millisecond))
	mustComplete(t, pj, done)
	return done, logs()
}

// workerLogs keeps the workers' logs: the pservers may be gone by the time
// a completed job is read (the operator stops them).
func workerLogs(logs map[string]string) map[string]string {
	out := map[string]string{}
	for pod, log := range logs {
		if strings.Contains(pod, "-worker-") {
			out[pod] = log
		}
	}
	return out
}

// The parameter-server example in each way its pods can address each other
// and each Gloo level, and started by Paddle's launcher: the processes report
// the same roles and the model learns.
func TestParameterServerModes(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	tests := []struct {
		name     string
		intranet paddlev1.Intranet
		gloo     int32
		launcher bool
	}{
		{name: "PodIP without Gloo", intranet: paddlev1.IntranetPodIP, gloo: 0},
		{name: "PodIP with Gloo everywhere", intranet: paddlev1.IntranetPodIP, gloo: 2},
		// All four pods share the one node's address, each on its own ports.
		{name: "Host intranet", intranet: paddlev1.IntranetHost, gloo: 1},
		{name: "every pod runs paddle.distributed.launch", intranet: paddlev1.IntranetPodIP, gloo: 1, launcher: true},
		// The launcher finds its own endpoints by the pod's DNS name
		// (POD_IP), which it takes as its address.
		{name: "paddle.distributed.launch in Service intranet", intranet: paddlev1.IntranetService, gloo: 1, launcher: true},
		// All four pods on the one node's address: each pod's launcher
		// starts only its own process, found by its name (POD_IP).
		{name: "paddle.distributed.launch in Host intranet", intranet: paddlev1.IntranetHost, gloo: 1, launcher: true},
		// PADDLE_WITH_GLOO=0 reaches the launcher, which would otherwise
		// turn Gloo on (--with_gloo defaults to 1).
		{name: "paddle.distributed.launch without Gloo", intranet: paddlev1.IntranetPodIP, gloo: 0, launcher: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := loadJob(t, "examples/jobs/wide-and-deep.yaml")
			job.Name = "wd"
			job.Spec.Intranet = tc.intranet
			job.Spec.WithGloo = &tc.gloo
			outputDir(t, job)
			logDir := ""
			if tc.launcher {
				logDir = launchEveryPod(t, job)
			}
			done, logs := runReadingLogs(t, pj, job)
			if !tc.launcher {
				checkPSJob(t, done, logs)
				return
			}
			// Each pod's launcher started exactly its own process: one
			// serverlog or one workerlog, whose process reported its role.
			checkPSJob(t, done, launchedProcessLogs(t, done, logDir))
		})
	}
}

// mountHostDir mounts a host directory at path in the Paddle container of
// every pserver and worker of a job, and returns those containers.
func mountHostDir(job *paddlev1.PaddleJob, volume, dir, path string, readOnly bool) []*corev1.Container {
	var out []*corev1.Container
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		spec := &job.Spec.Replicas(rt).Template.Spec
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}})
		c := &spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: path, ReadOnly: readOnly})
		out = append(out, c)
	}
	return out
}

// launchEveryPod makes every container of a job start with Paddle's
// launcher, logging per pod into a directory of the host, which it returns.
func launchEveryPod(t *testing.T, job *paddlev1.PaddleJob) string {
	t.Helper()
	dir := podsDir(t)
	for _, c := range mountHostDir(job, "logs", dir, "/logs", false) {
		c.Command = []string{"python3", "-m", "paddle.distributed.launch", "train.py"}
		c.Env = append(c.Env,
			corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			corev1.EnvVar{Name: "PADDLE_LOG_DIR", Value: "/logs/$(POD_NAME)"})
	}
	return dir
}

// The collective example in the intranets paddle-operator's examples do not show (example 2
// is PodIP): DNS names, and two workers sharing the node's address.
func TestCollectiveIntranets(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	for _, intranet := range []paddlev1.Intranet{paddlev1.IntranetService, paddlev1.IntranetHost} {
		t.Run(string(intranet), func(t *testing.T) {
			job := loadJob(t, "examples/jobs/resnet.yaml")
			job.Spec.Intranet = intranet
			outputDir(t, job)
			done, logs := runReadingLogs(t, pj, job)
			checkCollectiveJob(t, done, logs)
		})
	}
}

func TestWorkerExitCodeFailsTheJob(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	job := testutil.MakePaddleJob("fails", "").Workers(2).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sh", "-c", `if [ "$PADDLE_TRAINER_ID" = 1 ]; then exit 3; fi; sleep 600`).Obj()
	done := runToEnd(t, pj, job)
	c := meta.FindStatusCondition(done.Status.Conditions, paddlev1.JobFailed)
	want := `pod fails-worker-1: container "paddle" exited with code 3 (Error)`
	if done.Status.Phase != paddlev1.PaddleJobFailed || c == nil || c.Message != want {
		t.Fatalf("job %s, Failed condition %+v; want message %q", done.Status.Phase, c, want)
	}
	// The other worker was still running: the finished job stops it; the
	// failed one stays for inspection (cleanPodPolicy defaults to Never).
	waitPods(t, pj, done.Namespace, done.Name, "fails-worker-1")
}

// kubectl logs reaches a worker's log through the API server and the node.
func TestKubectlLogs(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed for this test (it is installed on the project's machines): %v", err)
	}
	job := testutil.MakePaddleJob("hello", "").Workers(1).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sh", "-c", `echo "hello from $PADDLE_TRAINING_ROLE $PADDLE_TRAINER_ID"`).Obj()
	done := runToEnd(t, pj, job)
	mustComplete(t, pj, done)
	out, err := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig(), "-n", done.Namespace, "logs", "hello-worker-0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello from TRAINER 0") {
		t.Fatalf("kubectl logs: %v\n%s", err, out)
	}
}
