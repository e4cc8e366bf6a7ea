package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// The node's own components out of the pods' reach, and what a pod may take
// of the node (docs/local-node.md#isolation): each attack is a pod of a
// tenant (namespaceUser), and the test, the cluster's admin, reads what it
// got. They are checkSandbox's.

// dnsSquatter is a hostNetwork pod's attempt to answer the cluster's DNS
// queries: it binds the cluster DNS address's port 53 over UDP every way a
// process may (with SO_REUSEPORT, as CoreDNS binds it, so that the kernel
// would share the queries between the two; without; with IP_FREEBIND, which
// binds an address that is not local), prints how each went, then READY,
// and answers every query it gets with its own address, printing QUERY for
// each.
const dnsSquatter = `import select, socket, sys
dns = sys.argv[1]
socks = []
for reuse in (True, False):
    for freebind in (False, True):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            if reuse:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if freebind:
                s.setsockopt(socket.SOL_IP, 15, 1)  # IP_FREEBIND
            s.bind((dns, 53))
            socks.append(s)
            print("BOUND reuseport=%s freebind=%s" % (reuse, freebind), flush=True)
        except OSError as e:
            print("REFUSED reuseport=%s freebind=%s: %s" % (reuse, freebind, e.strerror), flush=True)
            s.close()
print("READY", flush=True)
forged = bytes([10, 244, 0, 66])
while True:
    if not socks:
        select.select([], [], [])
    for s in select.select(socks, [], [])[0]:
        q, peer = s.recvfrom(512)
        print("QUERY from %s:%d" % peer, flush=True)
        end = q.index(0, 12) + 5
        if len(q) < end:
            continue
        reply = q[:2] + b"\x81\x80\x00\x01\x00\x01\x00\x00\x00\x00" + q[12:end]
        reply += b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x1e\x00\x04" + forged
        s.sendto(reply, peer)
`

// dnsLookups is how many times the victim looks its name up.
const dnsLookups = 20

// probeDNSSquatter: a tenant's hostNetwork pod binding the cluster DNS
// address:53, with SO_REUSEPORT and without, gets none of another
// namespace's pod's queries on its node: each of that pod's lookups of
// kubernetes.default is answered by the cluster DNS server, with the
// kubernetes Service's address.
func probeDNSSquatter(t *testing.T) {
	ctx := context.Background()
	attacker, ans := namespaceUser(t)
	nodeName := clusterNodes(t)[0]
	squatter := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-squatter", Namespace: ans},
		Spec: corev1.PodSpec{
			HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever, NodeSelector: onNode(nodeName),
			Containers: []corev1.Container{{
				Name: "squatter", Image: "paddlepaddle/paddle:3.0.0",
				Command: []string{"python3", "-c", dnsSquatter, node.DefaultClusterDNSIP},
			}},
		},
	}
	if _, err := attacker.Clientset().CoreV1().Pods(ans).Create(ctx, squatter, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the tenant creating its hostNetwork pod: %v", err)
	}
	bound := awaitLogLine(t, attacker, ans, squatter.Name, "READY")
	t.Logf("the squatter's binds:\n%s", bound)

	victim := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-victim", Namespace: newNamespace(t)},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, NodeSelector: onNode(nodeName),
			Containers: []corev1.Container{{
				Name: "victim", Image: "paddlepaddle/paddle:3.0.0",
				Command: []string{"python3", "-c", fmt.Sprintf(`import socket
for i in range(%d):
    try:
        print("ANSWER", socket.gethostbyname("kubernetes.default.svc.cluster.local"), flush=True)
    except OSError as e:
        print("ANSWER error", e, flush=True)`, dnsLookups)},
			}},
		},
	}
	done, log := runPodToEnd(t, victim)
	if done.Status.Phase != corev1.PodSucceeded {
		t.Errorf("the victim pod ended %s", done.Status.Phase)
	}
	var answers []string
	for _, line := range strings.Split(log, "\n") {
		if a, ok := strings.CutPrefix(line, "ANSWER "); ok {
			answers = append(answers, a)
		}
	}
	if len(answers) != dnsLookups {
		t.Errorf("the victim made %d lookups, want %d", len(answers), dnsLookups)
	}
	for i, a := range answers {
		if a != "10.96.0.1" {
			t.Errorf("lookup %d of kubernetes.default.svc.cluster.local answered %q, want the kubernetes Service's 10.96.0.1", i, a)
		}
	}
	if got := strings.Count(podLog(t, ans, squatter.Name), "QUERY"); got != 0 {
		t.Errorf("the hostNetwork squatter received %d of the victim's DNS queries, want none", got)
	}
	if err := attacker.Clientset().CoreV1().Pods(ans).Delete(ctx, squatter.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the squatter: %v", err)
	}
}

// awaitLogLine waits for a running pod of c's to log a line holding want
// and returns its log so far.
func awaitLogLine(t *testing.T, c *client.Client, ns, name, want string) string {
	t.Helper()
	var log string
	poll(t, 2*time.Minute, "pod "+name+" logs "+want, func() (bool, string) {
		p, err := c.Clientset().CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			t.Fatalf("pod %s ended %s before logging %q:%s", name, p.Status.Phase, want, statusLine(p))
		}
		b, err := c.Clientset().CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(context.Background())
		if err != nil {
			return false, fmt.Sprintf("%s; logs: %v", statusLine(p), err)
		}
		log = string(b)
		return strings.Contains(log, want), statusLine(p)
	})
	return log
}
