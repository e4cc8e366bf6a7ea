package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// etcdProbe is what a pod without credentials tries against the cluster's
// two etcds, each attempt printed as REFUSED or OPEN with what answered:
//   - the peer ports (control plane's and elastic's): their member list, in
//     plain HTTP and in TLS without a client certificate, and a forged raft
//     message — a heartbeat from a member that does not exist, at a term
//     long past, which an open peer port takes (204) and ignores;
//   - the control plane etcd's client port, without a client certificate;
//   - the elastic etcd's client port, which must stay open: Paddle's elastic
//     launcher in the pods dials it without credentials. Its answer shows
//     the pod reaches the machine's loopback ports at all, so the refusals
//     above are the listeners', not the network's.
//
// Any answer from etcd itself (its X-Etcd-Cluster-Id header, or a success)
// counts as OPEN.
const etcdProbe = `
import json, os, socket, ssl, sys, urllib.error, urllib.request

def varint(n):
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([low])
        out += bytes([low | 0x80])

def field(number, value):
    return varint(number << 3) + varint(value)

def context():
    # No client certificate; the server's is not checked either: the
    # question is whether etcd talks to a client without credentials.
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx

def attempt(url, data=None, headers=None):
    """(answered-by-etcd, description, response body or None)."""
    req = urllib.request.Request(url, data=data, headers=headers or {}, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=10, context=context() if url.startswith("https") else None) as r:
            return True, "%d %s" % (r.status, r.reason), r.read()
    except urllib.error.HTTPError as e:
        etcd = e.headers.get("X-Etcd-Cluster-Id") is not None
        return etcd, "%d %s%s" % (e.code, e.reason, " from etcd" if etcd else ""), None
    except (OSError, ssl.SSLError) as e:
        return False, "%s: %s" % (type(e).__name__, e), None

failed = False
def report(name, answered, how, want_open=False):
    global failed
    print("%s %s (%s)" % ("OPEN" if answered else "REFUSED", name, how), flush=True)
    if answered != want_open:
        failed = True

for etcd, port in (("etcd", os.environ["ETCD_PEER"]), ("elastic-etcd", os.environ["ELASTIC_ETCD_PEER"])):
    cluster_id, member = "0", 1
    for scheme in ("http", "https"):
        answered, how, body = attempt("%s://127.0.0.1:%s/members" % (scheme, port))
        if answered and body:
            members = json.loads(body)
            how += ": " + ", ".join(m["name"] for m in members)
            member = members[0]["id"]
            with urllib.request.urlopen("%s://127.0.0.1:%s/members" % (scheme, port), timeout=10,
                                        context=context() if scheme == "https" else None) as r:
                cluster_id = r.headers["X-Etcd-Cluster-Id"]
        report("%s-peer-members-%s" % (etcd, scheme), answered, how)
    # MsgHeartbeat (8) to the member from member 0x1234, at term 1.
    heartbeat = field(1, 8) + field(2, member) + field(3, 0x1234) + field(4, 1)
    answered, how, _ = attempt("http://127.0.0.1:%s/raft" % port, data=heartbeat, headers={
        "Content-Type": "application/protobuf", "X-Etcd-Cluster-ID": cluster_id, "X-Server-From": "1234",
        "X-Server-Version": "3.6.0", "X-Min-Cluster-Version": "3.0.0", "X-Raft-To": "%x" % member})
    report("%s-peer-forged-raft" % etcd, answered, how)

for scheme in ("http", "https"):
    answered, how, _ = attempt("%s://127.0.0.1:%s/version" % (scheme, os.environ["ETCD_CLIENT"]))
    report("etcd-client-%s" % scheme, answered, how)

answered, how, body = attempt("http://127.0.0.1:%s/version" % os.environ["ELASTIC_ETCD_CLIENT"])
report("elastic-etcd-client", answered, how + (": " + body.decode() if body else ""), want_open=True)
sys.exit(1 if failed else 0)
`

// A pod — a sandboxed process of this machine, with no credentials — can
// neither talk to either etcd's peer port (read its members, forge a raft
// message) nor to the control plane etcd's client port, while the elastic
// etcd's client port, which elastic training needs, stays reachable.
func TestEtcdRefusesPodsWithoutCredentials(t *testing.T) {
	ns := newNamespace(t)
	ports := cluster.Ports
	env := map[string]int{"ETCD_PEER": ports.EtcdPeer, "ELASTIC_ETCD_PEER": ports.ElasticEtcdPeer,
		"ETCD_CLIENT": ports.EtcdClient, "ELASTIC_ETCD_CLIENT": ports.ElasticEtcd}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-probe", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "probe", Image: "paddlepaddle/paddle:3.0.0", Command: []string{"python3", "-c", etcdProbe},
			}},
		},
	}
	for name, port := range env {
		if port == 0 {
			t.Fatalf("the cluster's state has no port for %s: %+v", name, ports)
		}
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: name, Value: strconv.Itoa(port)})
	}
	if _, err := pj.Clientset().CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	phase := awaitPodEnd(t, ns, pod.Name).Status.Phase
	log := podLog(t, ns, pod.Name)
	t.Logf("the probe reports:\n%s", log)
	var want []string
	for _, etcd := range []string{"etcd", "elastic-etcd"} {
		want = append(want, "REFUSED "+etcd+"-peer-members-http", "REFUSED "+etcd+"-peer-members-https", "REFUSED "+etcd+"-peer-forged-raft")
	}
	want = append(want, "REFUSED etcd-client-http", "REFUSED etcd-client-https", "OPEN elastic-etcd-client")
	for _, line := range want {
		if !strings.Contains(log, line+" (") {
			t.Errorf("the probe did not report %q", line)
		}
	}
	if phase != corev1.PodSucceeded {
		t.Errorf("the probe pod ended %s: a pod without credentials reached etcd", phase)
	}
}
