package controller

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/sidecar"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// Which pod holds the store container: ps-0 of a parameter-server job whose
// Gloo meets over the HTTP store, and no other.
func TestGlooStoreContainer(t *testing.T) {
	ps := func() *testutil.JobWrapper { return testutil.MakePaddleJob("g", "ns").PS(2).Workers(2) }
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		// hosts are the pods with the store container.
		hosts []string
	}{
		{"Gloo off", ps().Obj(), nil},
		{"level 1 over HTTP: ps-0", ps().WithGloo(1).Obj(), []string{"g-ps-0"}},
		{"level 2 over HTTP: ps-0", ps().WithGloo(2).Obj(), []string{"g-ps-0"}},
		{"over files: Paddle needs no store", withGlooDir(ps()).WithGloo(2).Obj(), nil},
		{"collective: worker-0's role maker serves it", testutil.MakePaddleJob("g", "ns").Workers(2).WithGloo(1).Obj(), nil},
	}
	ports := podcontract.PortRange{First: 23000, Count: 3}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hosts := map[string]bool{}
			for _, h := range tc.hosts {
				hosts[h] = true
			}
			for _, rt := range paddlev1.ReplicaTypes {
				for i := 0; i < tc.job.Spec.ReplicaCount(rt); i++ {
					pod := newPod(tc.job, rt, i, ports, podOptions{})
					store := findContainer(pod.Spec.InitContainers, glooStoreContainerName)
					if (store != nil) != hosts[pod.Name] {
						t.Errorf("%s has the store container: %v, want %v", pod.Name, store != nil, hosts[pod.Name])
					}
				}
			}
		})
	}
}

// The store container runs the Paddle container's image as that container
// runs, beside the training (a native sidecar), on the Gloo port the workers
// are given, and the training starts once it listens.
func TestGlooStoreContainerShape(t *testing.T) {
	job := testutil.MakePaddleJob("g", "ns").PS(2).Workers(2).WithGloo(1).Image("paddle:3.0.0").Obj()
	job.Spec.PS.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), RunAsNonRoot: ptr.To(true)}
	ports := podcontract.PortRange{First: 23000, Count: 3}
	pod := newPod(job, paddlev1.ReplicaPS, 0, ports, podOptionsFor(job, DefaultOptions()))
	store := findContainer(pod.Spec.InitContainers, glooStoreContainerName)
	if store == nil {
		t.Fatal("ps-0 has no store container")
	}
	if last := pod.Spec.InitContainers[len(pod.Spec.InitContainers)-1].Name; last != glooStoreContainerName {
		t.Errorf("init containers end with %q: the store must start after the wait for the endpoints", last)
	}
	if store.Image != "paddle:3.0.0" || store.Command[0] != "python3" || store.Command[len(store.Command)-1] != strconv.Itoa(int(ports.GlooPort())) {
		t.Errorf("store runs %s %v, want the Paddle image's python3 on port %d", store.Image, store.Command[:1], ports.GlooPort())
	}
	if !sidecar.Named(&pod.Spec, glooStoreContainerName) {
		t.Error("the store is not a sidecar (restartPolicy Always)")
	}
	if p := store.StartupProbe; p == nil || p.TCPSocket == nil || p.TCPSocket.Port.IntValue() != int(ports.GlooPort()) {
		t.Errorf("startup probe %+v, want TCP on %d", p, ports.GlooPort())
	}
	if sc := store.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 1000 {
		t.Errorf("security context %+v, want the Paddle container's", sc)
	}
	if len(store.Env) != 0 || len(store.VolumeMounts) != 0 {
		t.Errorf("the store got the job's environment or volumes: %v %v", store.Env, store.VolumeMounts)
	}
	if env := envOf(pod.Spec.Containers[0].Env); env["PADDLE_WITH_GLOO"] != "0" {
		t.Errorf("ps-0's PADDLE_WITH_GLOO %q, want 0: its role maker must not start a store of its own", env["PADDLE_WITH_GLOO"])
	}
}

// A sidecar's exit is not the training's: a pod whose store was stopped
// with SIGTERM failed for its Paddle container, and the store's restarts
// are not the job's.
func TestSidecarsAreNotTheTraining(t *testing.T) {
	job := testutil.MakePaddleJob("g", "ns").PS(2).Workers(1).WithGloo(1).Obj()
	pod := newPod(job, paddlev1.ReplicaPS, 0, podcontract.PortRange{First: 23000, Count: 3}, podOptions{})
	pod.Status.Phase = corev1.PodFailed
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{
		Name: glooStoreContainerName, RestartCount: 2,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error"}},
	}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name:  "paddle",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 139, Reason: "Error"}},
	}}
	if code, _ := failedExitCode(pod); code != 139 {
		t.Errorf("failed exit code %d, want the Paddle container's 139", code)
	}
	if n := containerRestarts(pod); n != 0 {
		t.Errorf("restarts %d, want 0: the store's are not the training's", n)
	}
}

// The store speaks what Paddle's HTTP store client asks of it: run the
// script the container runs, with the machine's python3.
func TestGlooStoreScript(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3, which runs the store in a Paddle image: %v", err)
	}
	// Port 0: the script says which port it took.
	cmd := exec.Command(python, "-c", glooStoreScript, "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var port int
	if _, scanErr := fmt.Sscanf(line, "Gloo HTTP store listening on port %d", &port); err != nil || scanErr != nil {
		t.Fatalf("the store's first line %q (%v, %v)\n%s", line, err, scanErr, stderr.String())
	}
	go func() { exited <- cmd.Wait() }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	do := func(method, path string, body []byte) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, got
	}
	if code, _ := do(http.MethodGet, "/job_worker/0", nil); code != http.StatusNotFound {
		t.Errorf("GET of a key no rank stored: %d, want 404", code)
	}
	value := []byte{0, 1, 2, 'a', 0xff}
	if code, _ := do(http.MethodPut, "/job_worker/0", value); code != http.StatusOK {
		t.Errorf("PUT: %d", code)
	}
	if code, got := do(http.MethodGet, "/job_worker/0", nil); code != http.StatusOK || !bytes.Equal(got, value) {
		t.Errorf("GET: %d %v, want 200 %v", code, got, value)
	}
	if code, _ := do(http.MethodGet, "/job_server/0", nil); code != http.StatusNotFound {
		t.Errorf("GET in another scope: %d, want 404", code)
	}
	if code, _ := do(http.MethodDelete, "/job_worker/0", nil); code != http.StatusOK {
		t.Errorf("DELETE: %d", code)
	}
	if code, got := do(http.MethodGet, "/job_worker/0", nil); code != http.StatusOK || !bytes.Equal(got, value) {
		t.Errorf("GET after a rank's DELETE: %d, want the value still (its peers may not have read it)", code)
	}
	if code, _ := do(http.MethodGet, "/no-key", nil); code != http.StatusBadRequest {
		t.Errorf("GET /no-key: %d, want 400", code)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Errorf("the store ended on SIGTERM with %v, want exit 0 (the kubelet stops sidecars so)\n%s", err, stderr.String())
	}
}

func findContainer(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}
