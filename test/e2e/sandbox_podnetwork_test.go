package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/pkg/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The pod network (docs/local-node.md#the-pod-network): every pod has a
// network namespace and an IP of its own, so two pods serve the same port;
// a third reaches both by IP, by the DNS names a headless Service gives
// them and through a ClusterIP Service by its name, resolved by the cluster
// DNS server — across nodes when the cluster has several; it cannot bind
// another pod's address, and of the machine it reaches the API server
// (through the cluster network's forward) and nothing of the control
// plane's other ports (probeMachine). It is one of checkSandbox's.
func probePodNetwork(t *testing.T, pj *client.Client) {
	ns := newNamespace(t, pj)
	// Below 1024: pods bind any port of their own network, as under a
	// container runtime, though they run as a user without privileges.
	const port = 80
	// On a cluster of several nodes web-a runs on the first, web-b and the
	// client on the last: every exchange crosses the cluster network.
	nodes := clusterNodes(t, pj)
	first, last := nodes[0], nodes[len(nodes)-1]
	ips := startWebServers(t, pj, ns, port, map[string]string{"web-a": first, "web-b": last})
	podCIDR := netip.MustParsePrefix("10.244.0.0/16")
	for name, ip := range ips {
		a, err := netip.ParseAddr(ip)
		if err != nil || a.IsLoopback() || !podCIDR.Contains(a) {
			t.Errorf("%s has IP %q, want a non-loopback address of %s", name, ip, podCIDR)
		}
	}
	if ips["web-a"] == ips["web-b"] {
		t.Fatalf("both servers have IP %s", ips["web-a"])
	}

	// The client asks each target and reports what answered.
	targets := map[string]string{
		"a by IP": ips["web-a"] + ":" + strconv.Itoa(port), "b by IP": ips["web-b"] + ":" + strconv.Itoa(port),
		"a by short name": "web-a.peers:" + strconv.Itoa(port), "b by short name": "web-b.peers:" + strconv.Itoa(port),
		"a by FQDN":   "web-a.peers." + ns + ".svc.cluster.local:" + strconv.Itoa(port),
		"web Service": "web:80", "web Service FQDN": "web." + ns + ".svc.cluster.local:80",
	}
	got := probeNetwork(t, pj, ns, targets, ips["web-a"], last)
	for what := range targets {
		want := []string{"web-a", "web-b"}
		switch {
		case strings.HasPrefix(what, "a "):
			want = want[:1]
		case strings.HasPrefix(what, "b "):
			want = want[1:]
		}
		if a := got.Answers[what]; !slices.Contains(want, a) {
			t.Errorf("%s (%s): answered %q, want one of %v", what, targets[what], a, want)
		}
	}
	for name, ip := range got.Resolved {
		if ip != "10.96.0.1" {
			t.Errorf("%s resolved to %s, want the kubernetes Service's 10.96.0.1", name, ip)
		}
	}
	if !strings.HasPrefix(got.Bound, "refused: ") {
		t.Errorf("binding web-a's address %s from another pod: %s, want it refused", ips["web-a"], got.Bound)
	}
}

// startWebServers starts pods web-a and web-b of subdomain "peers", each
// on the node nodes names for it and answering HTTP on port with its
// hostname, the headless Service "peers" and the Service "web" (port 80) of
// both, and returns the pods' IPs once both are ready.
func startWebServers(t *testing.T, pj *client.Client, ns string, port int32, nodes map[string]string) map[string]string {
	t.Helper()
	ctx := context.Background()
	cs := pj.Clientset()
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "peers", Namespace: ns}, Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "web"}, PublishNotReadyAddresses: true}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(port)}}}},
	} {
		if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Each server answers with its hostname, on the same port.
	server := fmt.Sprintf(`import http.server, socket
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = socket.gethostname().encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
http.server.HTTPServer(("0.0.0.0", %d), H).serve_forever()`, port)
	for _, name := range []string{"web-a", "web-b"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{
				Hostname: name, Subdomain: "peers", NodeSelector: onNode(nodes[name]),
				Containers: []corev1.Container{{
					Name: "web", Image: "paddlepaddle/paddle:3.0.0", Command: []string{"python3", "-c", server},
					Ports:          []corev1.ContainerPort{{ContainerPort: port}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}, PeriodSeconds: 1},
				}},
			},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ips := map[string]string{}
	poll(t, 2*time.Minute, "both servers ready", func() (bool, string) {
		var states []string
		for _, name := range []string{"web-a", "web-b"} {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			ready := false
			for _, c := range p.Status.Conditions {
				ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
			}
			if !ready {
				states = append(states, name+": "+statusLine(p))
				continue
			}
			if p.Spec.NodeName != nodes[name] {
				t.Fatalf("%s runs on %s, want %s", name, p.Spec.NodeName, nodes[name])
			}
			ips[name] = p.Status.PodIP
		}
		return len(states) == 0, strings.Join(states, "; ")
	})
	return ips
}

// networkProbe is what the client pod of probePodNetwork reports.
type networkProbe struct {
	// Answers are what each target answered, or the error.
	Answers map[string]string
	// Resolved are the kubernetes Service's names and their addresses.
	Resolved map[string]string
	// Bound says whether binding another pod's address worked.
	Bound string
}

// probeNetwork runs a client pod on node that fetches each target,
// resolves the kubernetes Service and binds otherIP, and returns its report.
func probeNetwork(t *testing.T, pj *client.Client, ns string, targets map[string]string, otherIP, node string) networkProbe {
	t.Helper()
	client := `import json, socket, sys, urllib.request
targets, other_ip = json.loads(sys.argv[1]), sys.argv[2]
out = {"answers": {}, "resolved": {}}
for what, addr in targets.items():
    try:
        out["answers"][what] = urllib.request.urlopen("http://" + addr + "/", timeout=10).read().decode()
    except Exception as e:
        out["answers"][what] = "error: %s" % e
for name in ("kubernetes.default.svc.cluster.local", "kubernetes.default"):
    out["resolved"][name] = socket.gethostbyname(name)
s = socket.socket()
try:
    s.bind((other_ip, 0)); out["bound"] = "bound " + other_ip
except OSError as e:
    out["bound"] = "refused: %s" % e.strerror
print("RESULT " + json.dumps(out))`
	targetsJSON, _ := json.Marshal(targets)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: ns},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, NodeSelector: onNode(node), Containers: []corev1.Container{{
			Name: "client", Image: "paddlepaddle/paddle:3.0.0",
			Command: []string{"python3", "-c", client, string(targetsJSON), otherIP},
		}}},
	}
	done, log := runPodToEnd(t, pj, pod)
	if done.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the client pod ended %s", done.Status.Phase)
	}
	_, result, ok := strings.Cut(log, "RESULT ")
	if !ok {
		t.Fatal("the client printed no result")
	}
	var got networkProbe
	if err := json.Unmarshal([]byte(strings.TrimSpace(result)), &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// clusterNodes are the names of the cluster's nodes, sorted.
func clusterNodes(t *testing.T, pj *client.Client) []string {
	t.Helper()
	list, err := pj.Clientset().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	if len(names) == 0 {
		t.Fatal("the cluster has no node")
	}
	slices.Sort(names)
	return names
}

// onNode is the node selector of the node named name.
func onNode(name string) map[string]string { return map[string]string{corev1.LabelHostname: name} }
