package e2e

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// `paddlejob up` adds its context to the user's kubeconfig and makes it
// current, keeping the user's own contexts; job commands then use it as
// kubectl does; `paddlejob down` leaves no process of the cluster or its
// pods, no listening port, no state directory and no context, and makes the
// user's context current again — after which a job command fails naming
// that context, touching nothing. It runs a cluster of its own, with a pod
// running, so it depends on no other test and on no test order. The CLI is
// `go install`ed into an empty GOBIN, as a user installs it: no launcher
// beside it, yet the launcher image runs (the CLI is the launcher).
func TestUpAndDownKeepTheUsersKubeconfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeUsersKubeconfig(t, kubeconfig)
	gobin := filepath.Join(dir, "gobin")
	install := exec.Command("go", "install", "./cmd/paddlejob")
	install.Dir, install.Env = testenv.RepoRoot(), append(os.Environ(), "GOBIN="+gobin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install ./cmd/paddlejob: %v\n%s", err, out)
	}
	if entries, _ := os.ReadDir(gobin); len(entries) != 1 {
		t.Fatalf("GOBIN holds %d files; want paddlejob alone", len(entries))
	}
	paddlejob := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(gobin, "paddlejob"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "KUBEBUILDER_ASSETS="+os.Getenv("KUBEBUILDER_ASSETS"))
		out, err := cmd.CombinedOutput()
		t.Logf("paddlejob %s:\n%s", strings.Join(args, " "), out)
		return string(out), err
	}
	if _, err := paddlejob("up", "--home", home); err != nil {
		t.Fatal(err)
	}
	contextName := localcluster.ContextName(home)
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != contextName || cfg.Contexts["staging"].Namespace != "team-staging" || cfg.AuthInfos["prod"].Token != "token-of-prod" {
		t.Fatalf("after up: current context %q, the user's contexts %+v", cfg.CurrentContext, cfg.Contexts)
	}
	own, err := localcluster.Running(context.Background(), localcluster.Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	ports := own.Ports
	// The job commands use the current context, as kubectl does.
	job := testutil.MakePaddleJob("sleeper", "default").Workers(1).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sleep", "3600").Obj()
	ownClient, err := client.NewFromKubeconfig(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := ownClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	if _, err := ownClient.WaitFor(ctx, "default", "sleeper", client.Running, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	if out, err := paddlejob("get", "sleeper"); err != nil || !strings.Contains(out, "Running") {
		t.Errorf("paddlejob get on the current context: %v", err)
	}
	checkLauncherImageRuns(ctx, t, ownClient)

	if _, err := paddlejob("down", "--home", home); err != nil {
		t.Fatal(err)
	}
	checkDownLeftNothing(t, home, ports.All())
	after, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if after.CurrentContext != "prod" || after.Contexts[contextName] != nil || len(after.Contexts) != 2 {
		t.Errorf("after down: current context %q, contexts %v; want prod current and the user's two", after.CurrentContext, after.Contexts)
	}
	// With the local cluster gone, nothing silently falls back to it: the
	// command fails naming the current context and its server.
	out, err := paddlejob("delete", "sleeper")
	if err == nil || !strings.Contains(out, `cannot reach context "prod" (https://127.0.0.1:1)`) {
		t.Errorf("delete against an unreachable current context: %v", err)
	}
	if again, _ := clientcmd.LoadFromFile(kubeconfig); again.CurrentContext != "prod" || len(again.Contexts) != 2 {
		t.Errorf("the failed delete changed the kubeconfig: %+v", again.Contexts)
	}
}

// writeUsersKubeconfig writes at path the user's own contexts, prod and
// staging: prod current, both pointing at a port nothing listens on (no
// traffic leaves the machine).
func writeUsersKubeconfig(t *testing.T, path string) {
	t.Helper()
	user := clientcmdapi.NewConfig()
	for _, name := range []string{"prod", "staging"} {
		user.Clusters[name] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
		user.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "token-of-" + name}
		user.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "team-" + name}
	}
	user.CurrentContext = "prod"
	if err := clientcmd.WriteToFile(*user, path); err != nil {
		t.Fatal(err)
	}
}

// checkDownLeftNothing checks that after down no process mentions the
// cluster's home, none of its ports listens, and home is gone.
func checkDownLeftNothing(t *testing.T, home string, ports []int) {
	t.Helper()
	if left := processesMentioning(home); len(left) > 0 {
		t.Errorf("processes left after down:\n%s", strings.Join(left, "\n"))
	}
	for _, port := range ports {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond); err == nil {
			c.Close()
			t.Errorf("port %d still listens after down", port)
		}
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("the state directory %s is still there", home)
	}
}

// processesMentioning lists running processes whose command line or
// environment names one of the paths: the cluster's components and every pod
// process started from the test's binaries.
func processesMentioning(paths ...string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		for _, p := range paths {
			if strings.Contains(string(cmd), p) || strings.Contains(string(env), p) {
				out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
				break
			}
		}
	}
	return out
}

// checkLauncherImageRuns runs a pod of the launcher image, a lone trainer
// (no Job around it), and checks the launcher ran its program.
func checkLauncherImageRuns(ctx context.Context, t *testing.T, c *client.Client) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "launched", Namespace: "default"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "launcher", Image: "paddlejob/launcher", Args: []string{"--no-pserver", "--", "sh", "-c", "echo trainer started by the launcher"},
		}}},
	}
	pods := c.Clientset().CoreV1().Pods("default")
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=launched"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			if p.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("the launcher pod %s", statusLine(p))
			}
			break
		}
	}
	r, err := c.Logs(ctx, "default", "launched", client.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, _ := io.ReadAll(r)
	if !strings.Contains(string(out), "trainer started by the launcher") {
		t.Errorf("the launcher pod's log:\n%s", out)
	}
}
