package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// machineProbe is run by a pod: it tries an abstract Unix socket of the
// host, every port of the cluster at the pod's loopback, at the host IP
// (KUBERNETES_SERVICE_HOST) and at its node's IP, and squats the API
// server's port, then asks the API server through its forward; it prints
// what it reached.
const machineProbe = `import json, os, socket, ssl, sys, urllib.request
abstract, ports = sys.argv[1], json.loads(sys.argv[2])
host_ip, api_port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
out = {"reached": [], "abstract": "", "squat": "", "squat_host_ip": "", "api": ""}
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("\0" + abstract); out["abstract"] = "connected"
except OSError as e:
    out["abstract"] = "refused: %s" % e.strerror
for name, port in ports.items():
    for host in ("127.0.0.1", host_ip, os.environ["NODE_IP"]):
        try:
            socket.create_connection((host, port), timeout=3).close()
            out["reached"].append("%s:%s (%s)" % (host, port, name))
        except OSError:
            pass
squat = socket.socket(); squat.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
squat.bind(("0.0.0.0", int(api_port))); squat.listen(); out["squat"] = "bound 0.0.0.0:" + api_port
try:
    socket.socket().bind((host_ip, int(api_port))); out["squat_host_ip"] = "bound"
except OSError as e:
    out["squat_host_ip"] = "refused: %s" % e.strerror
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
try:
    urllib.request.urlopen("https://%s:%s/version" % (host_ip, api_port), context=ctx, timeout=10)
except urllib.error.HTTPError as e:
    out["api"] = "HTTP %d from the API server" % e.code
except Exception as e:
    out["api"] = "error: %s" % e
else:
    out["api"] = "HTTP 200 from the API server"
print("RESULT " + json.dumps(out))`

// probeMachine checks what a pod reaches of the machine: of the cluster's
// ports only the cluster network's forwards (the API server, the elastic
// etcd guard, the progress endpoint) at the host IP, nothing at its node's IP; no abstract Unix socket of the host
// (they belong to a network namespace); and binding a control-plane port is
// binding it in the pod's own network, which takes nothing from the
// component.
func probeMachine(t *testing.T, pj *client.Client, st *localcluster.State) {
	abstract := fmt.Sprintf("paddlejob-e2e-%d", st.Ports.APIServer)
	l, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	p := st.Ports
	ports := map[string]int{"etcd client": p.EtcdClient, "etcd peer": p.EtcdPeer, "elastic etcd peer": p.ElasticEtcdPeer,
		"kubelet": p.Kubelets[0], "scheduler": p.Scheduler, "controller manager": p.ControllerManager,
		"operator probes": p.OperatorProbes, "webhook": p.Webhook,
		"API server": p.APIServer, "elastic etcd guard": p.ElasticEtcd, "progress": p.Progress}
	portsJSON, _ := json.Marshal(ports)
	ns := newNamespace(t, pj)
	done, log := runPodToEnd(t, pj, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "machine-probe", Namespace: ns},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "probe", Image: "paddlepaddle/paddle:3.0.0", Command: []string{"python3", "-c", machineProbe, abstract, string(portsJSON)},
			Env: []corev1.EnvVar{{Name: "NODE_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}}},
		}}},
	})
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the probe pod ended %s", done.Status.Phase)
	}
	_, result, ok := strings.Cut(log, "RESULT ")
	if !ok {
		t.Fatal("the probe printed no result")
	}
	var got struct {
		Reached              []string
		Abstract, Squat, API string
		SquatHostIP          string `json:"squat_host_ip"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(result)), &got); err != nil {
		t.Fatal(err)
	}
	hostIP := st.HostIP()
	want := []string{
		hostIP + ":" + strconv.Itoa(p.APIServer) + " (API server)",
		hostIP + ":" + strconv.Itoa(p.ElasticEtcd) + " (elastic etcd guard)",
		hostIP + ":" + strconv.Itoa(p.Progress) + " (progress)",
	}
	for _, r := range got.Reached {
		if !slices.Contains(want, r) {
			t.Errorf("the pod reached %s", r)
		}
	}
	for _, w := range want {
		if !slices.Contains(got.Reached, w) {
			t.Errorf("the pod did not reach the forward %s", w)
		}
	}
	if !strings.HasPrefix(got.Abstract, "refused: ") {
		t.Errorf("the host's abstract socket @%s: %s, want it refused", abstract, got.Abstract)
	}
	if !strings.HasPrefix(got.Squat, "bound ") || !strings.HasPrefix(got.SquatHostIP, "refused: ") {
		t.Errorf("squatting the API server's port: %q in the pod's network, %q at the host IP; want bound and refused", got.Squat, got.SquatHostIP)
	}
	if !strings.HasPrefix(got.API, "HTTP ") || !strings.Contains(got.API, "from the API server") {
		t.Errorf("the API server through its forward, with its port squatted in the pod: %s", got.API)
	}
}
