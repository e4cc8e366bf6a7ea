package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// A new user's path, on a local cluster started by `paddlejob up` with no
// flags (this machine's CPUs and memory, no GPUs, pods may write only
// below /tmp/paddlejob-examples): `paddlejob init` in an empty directory,
// then the starter's parameter-server and collective jobs run from their
// build context with `paddlejob run --build-context` to Completed, each
// writing its checkpoints and model to the context's output/; Paddle says
// who every process was and what the model learned. A job larger than the
// machine stays Pending and run, get and describe say why; validate says
// offline what the cluster says. It runs a cluster of its own: adding an
// image restarts the node.
func TestYourOwnProgram(t *testing.T) {
	t.Parallel()
	home, err := os.MkdirTemp("", "paddlejob-e2e-yours-")
	if err != nil {
		t.Fatal(err)
	}
	env, pj := upWithoutFlags(t, home)
	dir := filepath.Join(t.TempDir(), "my-ctr")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := paddlejobCLI(t, env, "init", dir)
	if code != 0 || !strings.Contains(out, "wrote my-ctr in "+dir) {
		t.Fatalf("paddlejob init: exit %d\n%s%s", code, out, errOut)
	}

	t.Run("parameter server", func(t *testing.T) {
		runYourPSProgram(t, pj, env, dir)
	})

	t.Run("collective", func(t *testing.T) {
		runYourCollectiveProgram(t, pj, env, dir)
	})

	t.Run("the examples write their output", func(t *testing.T) {
		checkExamplesWriteTheirOutput(t, pj)
	})

	t.Run("a job larger than the machine says why it is Pending", func(t *testing.T) {
		checkABigJobSaysWhyItIsPending(t, pj, env)
	})

	t.Run("validate says offline what the cluster says", func(t *testing.T) {
		checkValidateOfflineSaysWhatTheClusterSays(t, pj, env)
	})
}

// checkExamplesWriteTheirOutput: the example jobs keep their output in
// DirectoryOrCreate hostPaths below localcluster.ExamplesDir, which up lets
// pods write. A pod mounting a new directory there, as the demo's trainers
// do, starts and writes (on a fresh machine, where up had to create
// ExamplesDir, the demo's trainers once waited forever on a FailedMount).
func checkExamplesWriteTheirOutput(t *testing.T, pj *client.Client) {
	ns := newNamespace(t, pj)
	out := filepath.Join(localcluster.ExamplesDir, ns)
	t.Cleanup(func() { os.RemoveAll(out) })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "writer", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo written > /output/marker"},
				VolumeMounts: []corev1.VolumeMount{{Name: "output", MountPath: "/output"}},
			}},
			Volumes: []corev1.Volume{{Name: "output", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: out, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}}},
		},
	}
	if _, err := pj.Clientset().CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := awaitPodEnd(t, pj, ns, pod.Name); p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the writer pod %s: %s", p.Status.Phase, statusLine(p))
	}
	if got, err := os.ReadFile(filepath.Join(out, "marker")); err != nil || string(got) != "written\n" {
		t.Errorf("%s/marker holds %q (%v), want what the pod wrote", out, got, err)
	}
}

// upWithoutFlags starts a local cluster in home with `paddlejob up` and no
// flag, as a new user does, its context in a kubeconfig of its own that the
// returned environment names, and a client of it; `paddlejob down` stops it
// when the test ends.
func upWithoutFlags(t *testing.T, home string) ([]string, *client.Client) {
	t.Helper()
	env := []string{"KUBECONFIG=" + filepath.Join(t.TempDir(), "kubeconfig"), "PADDLEJOB_HOME=" + home}
	start := time.Now()
	if out, errOut, code := paddlejobCLI(t, env, "up"); code != 0 {
		t.Fatalf("paddlejob up: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("paddlejob up in %s", time.Since(start).Round(100*time.Millisecond))
	c, err := client.NewFromKubeconfig(strings.TrimPrefix(env[0], "KUBECONFIG="), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, errOut, code := paddlejobCLI(t, env, "down"); code != 0 {
			t.Errorf("paddlejob down: exit %d\n%s%s", code, out, errOut)
		}
		if left := processesMentioning(home); len(left) > 0 {
			t.Errorf("processes left after down:\n%s", strings.Join(left, "\n"))
		}
	})
	return env, c
}

// runYourPSProgram runs the parameter-server job of the program init
// wrote in dir, building its image from dir: the node restarts to read the
// Dockerfile, each trainer says who it was, and the model learned.
func runYourPSProgram(t *testing.T, pj *client.Client, env []string, dir string) {
	ns := newNamespace(t, pj)
	_, errOut, code := paddlejobCLI(t, env, "run", "-f", filepath.Join(dir, "job-ps.yaml"), "--build-context", dir, "-n", ns)
	// The first run adds the image: the node restarts to read the
	// Dockerfile, and lets pods write the context's output/.
	if code != 0 || !strings.Contains(errOut, "image my-ctr:v1: the local node runs it from the build context "+dir+" (the node restarted to read its Dockerfile); pods may write in "+filepath.Join(dir, "output")) ||
		!strings.Contains(errOut, "PaddleJob "+ns+"/my-ctr-ps completed") {
		dumpJob(t, pj, ns, "my-ctr-ps")
		t.Fatalf("paddlejob run: exit %d\n%s", code, errOut)
	}
	logRestarts(t, pj, ns, "my-ctr-ps")
	for rank := 0; rank < 2; rank++ {
		log := podLog(t, pj, ns, fmt.Sprintf("my-ctr-ps-worker-%d", rank))
		if !strings.Contains(log, fmt.Sprintf("role=TRAINER mode=ps rank=%d world_size=2 servers=2", rank)) {
			t.Errorf("trainer %d does not say who it was:\n%s", rank, log)
		}
	}
	checkModel(t, filepath.Join(dir, "output", "ps"), podLog(t, pj, ns, "my-ctr-ps-worker-0"))
}

// runYourCollectiveProgram runs the collective job of the same program
// and image (no node restart): each rank of 2 says who it was, and the
// model learned.
func runYourCollectiveProgram(t *testing.T, pj *client.Client, env []string, dir string) {
	ns := newNamespace(t, pj)
	_, errOut, code := paddlejobCLI(t, env, "run", "-f", filepath.Join(dir, "job-collective.yaml"), "--build-context", dir, "-n", ns)
	// The same image and Dockerfile: no restart.
	if code != 0 || !strings.Contains(errOut, "image my-ctr:v1: the local node runs it from the build context "+dir+" (as before") ||
		!strings.Contains(errOut, "PaddleJob "+ns+"/my-ctr-collective completed") {
		dumpJob(t, pj, ns, "my-ctr-collective")
		t.Fatalf("paddlejob run: exit %d\n%s", code, errOut)
	}
	logs := map[string]string{}
	for rank := 0; rank < 2; rank++ {
		pod := fmt.Sprintf("my-ctr-collective-worker-%d", rank)
		logs[pod] = podLog(t, pj, ns, pod)
	}
	for rank := 0; rank < 2; rank++ {
		if !strings.Contains(strings.Join([]string{logs["my-ctr-collective-worker-0"], logs["my-ctr-collective-worker-1"]}, "\n"),
			fmt.Sprintf("role=TRAINER mode=collective rank=%d world_size=2", rank)) {
			t.Errorf("no process says it was rank %d of 2:\n%v", rank, logs)
		}
	}
	checkModel(t, filepath.Join(dir, "output", "collective"), logs["my-ctr-collective-worker-0"]+logs["my-ctr-collective-worker-1"])
}

// checkABigJobSaysWhyItIsPending runs a job asking for more CPU than the
// node has: run says why it is Pending, and get and describe say it too,
// with the capacity that makes room for it.
func checkABigJobSaysWhyItIsPending(t *testing.T, pj *client.Client, env []string) {
	ns := newNamespace(t, pj)
	node, err := pj.Clientset().CoreV1().Nodes().Get(context.Background(), localcluster.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cpus := node.Status.Allocatable.Cpu().Value()
	want := fmt.Sprintf("needs %d CPU, the node has %d", cpus+3, cpus)
	job := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(job, []byte(strings.ReplaceAll(bigJob, "CPUS", strconv.FormatInt(cpus+3, 10))), 0o644); err != nil {
		t.Fatal(err)
	}
	// run shows the reason as soon as the scheduler gives up on the
	// pods; interrupted then, it leaves the job running (exit 130).
	cmd := exec.Command(filepath.Join(binDir, "paddlejob"), "run", "-f", job, "-n", ns)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	found := ""
	for sc := bufio.NewScanner(stderr); sc.Scan(); {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), want) && found == "" {
			found = sc.Text()
			_ = cmd.Process.Signal(syscall.SIGINT)
		}
	}
	err = cmd.Wait()
	if found == "" {
		t.Fatalf("paddlejob run never said %q (%v):\n%s", want, err, strings.Join(seen, "\n"))
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(strings.Join(seen, "\n"), "stopped watching; PaddleJob "+ns+"/big keeps running") {
		t.Errorf("interrupted, paddlejob run ended with %d:\n%s", code, strings.Join(seen, "\n"))
	}
	t.Logf("paddlejob run said: %s", found)
	// Both pods ask for more than the node has: the hint makes room for both.
	hint := fmt.Sprintf("paddlejob down; paddlejob up --capacity cpu=%d", 2*(cpus+3))
	for _, args := range [][]string{{"get", "big"}, {"get"}, {"describe", "big"}} {
		out, errOut, code := paddlejobCLI(t, env, append(args, "-n", ns)...)
		if code != 0 || !strings.Contains(out, "Pending ps-0, worker-0: "+want) || !strings.Contains(out, hint) {
			t.Errorf("paddlejob %s: exit %d, want %q and %q:\n%s%s", strings.Join(args, " "), code, want, hint, out, errOut)
		}
	}
}

// checkValidateOfflineSaysWhatTheClusterSays validates bad manifests
// offline and with --server: both refuse, and offline says every field
// error the cluster says.
func checkValidateOfflineSaysWhatTheClusterSays(t *testing.T, pj *client.Client, env []string) {
	ns := newNamespace(t, pj)
	good := mustRead(t, "examples/jobs/resnet.yaml")
	for name, manifest := range map[string]string{
		"an unknown field":      strings.Replace(good, "cleanPodPolicy: Never", "cleanPodPolicy: Never\n  foo: bar", 1),
		"an enum":               strings.Replace(good, "cleanPodPolicy: Never", "cleanPodPolicy: Sometimes", 1),
		"a CEL rule":            strings.Replace(good, "name: resnet", "name: ResNet", 1),
		"the webhook":           strings.Replace(good, "- name: paddle", "- name: wait-for-endpoints", 1),
		"the webhook's env":     strings.Replace(good, "- name: PADDLE_CHECKPOINT_DIR", "- name: PADDLE_TRAINER_ID\n                value: \"1\"\n              - name: PADDLE_CHECKPOINT_DIR", 1),
		"replicas out of range": strings.Replace(good, "replicas: 2", "replicas: 10001", 1),
	} {
		file := filepath.Join(t.TempDir(), "job.yaml")
		if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		offline, _, code := paddlejobCLI(t, env, "validate", "-f", file)
		server, _, serverCode := paddlejobCLI(t, env, "validate", "-f", file, "--server", "-n", ns)
		if code != 1 || serverCode != 1 {
			t.Errorf("%s: validate exits %d offline, %d with --server; want 1", name, code, serverCode)
		}
		// The field errors, as the API server or the webhook words them.
		for _, e := range fieldErrors(server) {
			if !strings.Contains(offline, e) {
				t.Errorf("%s: the cluster says %q, validate offline does not:\noffline: %s\nserver:  %s", name, e, offline, server)
			}
		}
		if len(fieldErrors(server)) == 0 {
			t.Errorf("%s: no field error from the cluster: %s", name, server)
		}
	}
}

// bigJob asks for more CPUs than the node has, in each of its two pods.
const bigJob = `apiVersion: batch.paddlepaddle.org/v1
kind: PaddleJob
metadata:
  name: big
spec:
  ps:
    replicas: 1
    template:
      spec:
        containers:
        - {name: paddle, image: busybox, command: [sleep, "600"], resources: {requests: {cpu: "CPUS"}}}
  worker:
    replicas: 1
    template:
      spec:
        containers:
        - {name: paddle, image: busybox, command: [sleep, "600"], resources: {requests: {cpu: "CPUS"}}}
`

// fieldErrors are the "path: Invalid value: ..." and unknown-field parts of
// an API error message.
func fieldErrors(msg string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(spec\.[^\s:]+|metadata\.name[^:]*|<nil>): (Invalid value|Unsupported value|Required value|Forbidden)[^,\]]*`).FindAllString(msg, -1) {
		out = append(out, m)
	}
	for _, m := range regexp.MustCompile(`unknown field "[^"]+"`).FindAllString(msg, -1) {
		out = append(out, m)
	}
	return out
}

// checkModel checks what the starter's trainer 0 wrote: the model, and the
// test accuracy it reached, next to the data's optimum (about 0.84).
func checkModel(t *testing.T, output, logs string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(output, "model", "done.json"))
	if err != nil {
		t.Fatalf("no model written: %v", err)
	}
	var meta struct {
		Epochs       int     `json:"epochs"`
		TestAccuracy float64 `json:"test_accuracy"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	params, _ := filepath.Glob(filepath.Join(output, "model", "*.pdparams"))
	if meta.Epochs != 5 || len(params) != 1 {
		t.Errorf("model after %d epochs, parameters %v", meta.Epochs, params)
	}
	// What the program printed, epoch by epoch (the first rank to print
	// each), and rank 0 at the end.
	loss, accuracy := map[int]float64{}, map[int]float64{}
	for _, m := range regexp.MustCompile(`epoch (\d)/5: loss=([\d.]+) test_accuracy=([\d.]+)`).FindAllStringSubmatch(logs, -1) {
		epoch, _ := strconv.Atoi(m[1])
		if _, seen := loss[epoch]; !seen {
			loss[epoch], _ = strconv.ParseFloat(m[2], 64)
			accuracy[epoch], _ = strconv.ParseFloat(m[3], 64)
		}
	}
	if len(loss) != 5 {
		t.Fatalf("the logs print epochs %v, want 1 to 5:\n%s", loss, logs)
	}
	t.Logf("epoch 1: loss %.4f, test accuracy %.3f; epoch 5: loss %.4f, test accuracy %.3f (the data's optimum: about 0.84)",
		loss[1], accuracy[1], loss[5], accuracy[5])
	if loss[5] >= loss[1] {
		t.Errorf("the training loss did not fall: %.4f after epoch 1, %.4f after epoch 5", loss[1], loss[5])
	}
	final := regexp.MustCompile(`final: rank=0 world_size=2 test_accuracy=([\d.]+)`).FindStringSubmatch(logs)
	if final == nil {
		t.Fatalf("rank 0 printed no final accuracy:\n%s", logs)
	}
	printed, _ := strconv.ParseFloat(final[1], 64)
	if math.Abs(printed-meta.TestAccuracy) > 5e-5 {
		t.Errorf("rank 0 printed a final test accuracy of %.4f, the model it wrote says %.4f", printed, meta.TestAccuracy)
	}
	// An untrained classifier scores about 0.5.
	if meta.TestAccuracy < 0.8 {
		t.Errorf("the model's test accuracy is %.3f: it did not learn", meta.TestAccuracy)
	}
	if _, err := os.Stat(filepath.Join(output, "checkpoints", "epoch-5", "done.json")); err != nil {
		t.Errorf("no checkpoint of the last epoch: %v", err)
	}
}

// paddlejobCLI runs the paddlejob binary as a user would, with env added.
func paddlejobCLI(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "paddlejob"), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = testenv.RepoRoot()
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("paddlejob %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("paddlejob %s: exit %d", strings.Join(args, " "), cmd.ProcessState.ExitCode())
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}
