package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// etcdProbe is what a pod without credentials tries against the cluster's
// two etcds, each attempt printed as REFUSED or OPEN with what answered:
//   - the peer ports (control plane's and elastic's): their member list, in
//     plain HTTP and in TLS without a client certificate, and a forged raft
//     message — a heartbeat from a member that does not exist, at a term
//     long past, which an open peer port takes (204) and ignores;
//   - the control plane etcd's client port, without a client certificate;
//   - the elastic etcd's client socket, in the cluster's home, which the
//     pod does not see, and the JSON gateway etcd serves beside gRPC, which
//     the elastic etcd's guard does not (it serves gRPC alone).
//
// Any answer from etcd itself (its X-Etcd-Cluster-Id header, or a success)
// counts as OPEN.
const etcdProbe = `
import http.client, json, os, socket, ssl, sys, urllib.error, urllib.request

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
    # HTTPException: an answer that is not HTTP/1 (the guard speaks gRPC
    # alone; through the node's forward its HTTP/2 preface arrives first).
    except (OSError, ssl.SSLError, http.client.HTTPException) as e:
        return False, "%s: %s" % (type(e).__name__, e), None

failed = False
def report(name, answered, how):
    global failed
    print("%s %s (%s)" % ("OPEN" if answered else "REFUSED", name, how), flush=True)
    if answered:
        failed = True

for etcd, port in (("etcd", os.environ["ETCD_PEER"]), ("elastic-etcd", os.environ["ELASTIC_ETCD_PEER"])):
    cluster_id, member = "0", 1
    for scheme in ("http", "https"):
        answered, how, body = attempt("%s://%s:%s/members" % (scheme, os.environ["HOST"], port))
        if answered and body:
            members = json.loads(body)
            how += ": " + ", ".join(m["name"] for m in members)
            member = members[0]["id"]
            with urllib.request.urlopen("%s://%s:%s/members" % (scheme, os.environ["HOST"], port), timeout=10,
                                        context=context() if scheme == "https" else None) as r:
                cluster_id = r.headers["X-Etcd-Cluster-Id"]
        report("%s-peer-members-%s" % (etcd, scheme), answered, how)
    # MsgHeartbeat (8) to the member from member 0x1234, at term 1.
    heartbeat = field(1, 8) + field(2, member) + field(3, 0x1234) + field(4, 1)
    answered, how, _ = attempt("http://%s:%s/raft" % (os.environ["HOST"], port), data=heartbeat, headers={
        "Content-Type": "application/protobuf", "X-Etcd-Cluster-ID": cluster_id, "X-Server-From": "1234",
        "X-Server-Version": "3.6.0", "X-Min-Cluster-Version": "3.0.0", "X-Raft-To": "%x" % member})
    report("%s-peer-forged-raft" % etcd, answered, how)

for scheme in ("http", "https"):
    answered, how, _ = attempt("%s://%s:%s/version" % (scheme, os.environ["HOST"], os.environ["ETCD_CLIENT"]))
    report("etcd-client-%s" % scheme, answered, how)

try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ["ELASTIC_ETCD_SOCKET"])
    report("elastic-etcd-socket", True, "connected")
except OSError as e:
    report("elastic-etcd-socket", False, "%s: %s" % (type(e).__name__, e))

answered, how, _ = attempt("http://%s:%s/v3/cluster/member/list" % (os.environ["HOST"], os.environ["ELASTIC_ETCD_CLIENT"]), data=b"{}")
report("elastic-etcd-gateway", answered, how)
sys.exit(1 if failed else 0)
`

// elasticEtcdProbe is a pod's use of the elastic etcd with python-etcd3,
// the client Paddle's elastic launcher uses, at the address elastic jobs
// are given (the guard's), as a pod of no PaddleJob: the cluster-wide calls
// and its key calls are refused, each printed with the gRPC status it ended
// with.
const elasticEtcdProbe = `
import io, os, sys, threading
import etcd3, grpc
from etcd3 import etcdrpc

client = etcd3.client(host=os.environ["HOST"], port=int(os.environ["ELASTIC_ETCD_CLIENT"]))
failed = False
def report(name, ok, how):
    global failed
    print("%s %s (%s)" % ("OK" if ok else "FAILED", name, how), flush=True)
    failed = failed or not ok

def refused(name, call):
    global failed
    try:
        call()
        print("ANSWERED %s" % name, flush=True)
        failed = True
    except grpc.RpcError as e:
        print("%s %s (%s)" % (e.code().name, name, e.details()), flush=True)
        failed = failed or e.code() != grpc.StatusCode.PERMISSION_DENIED
    except Exception as e:  # python-etcd3 turns some statuses into its own errors
        print("ERROR %s (%s: %s)" % (name, type(e).__name__, e), flush=True)
        failed = True

refused("member-add", lambda: client.add_member(["http://127.0.0.1:1"]))
refused("member-list", lambda: list(client.members))
refused("snapshot", lambda: client.snapshot(io.BytesIO()))
refused("auth-enable", lambda: etcdrpc.AuthStub(client.channel).AuthEnable(etcdrpc.AuthEnableRequest(), 10))
refused("move-leader", lambda: client.maintenancestub.MoveLeader(etcdrpc.MoveLeaderRequest(targetID=1), 10))
refused("status", lambda: client.status())
# A pod of no PaddleJob reaches no key either (a job's pods reach their
# own: sandbox_node_test.go's probeEtcdOtherJob).
refused("put", lambda: client.put("probe/rank0", b"10.0.0.1"))
refused("get", lambda: client.get("probe/rank0"))
sys.exit(1 if failed else 0)
`

// probeEtcds: a pod — a sandboxed process of this machine, with no
// credentials — can neither talk to either etcd's peer port (read its
// members, forge a raft message) nor to the control plane etcd's client
// port nor to the elastic etcd's own socket. Through the elastic etcd's
// guard, at the address elastic jobs are given, a pod of no PaddleJob gets
// no key (put, get), and adding a member, taking a snapshot, enabling authentication, moving the
// leader are refused with PERMISSION_DENIED; etcd, asked on its socket, has
// the same members after. A check of checkSandbox.
func probeEtcds(t *testing.T, pj *client.Client, st *localcluster.State) {
	ns := newNamespace(t, pj)
	ports := st.Ports
	membersBefore := elasticEtcdMembers(t, st)
	env := map[string]string{"ETCD_PEER": strconv.Itoa(ports.EtcdPeer), "ELASTIC_ETCD_PEER": strconv.Itoa(ports.ElasticEtcdPeer),
		"ETCD_CLIENT": strconv.Itoa(ports.EtcdClient), "ELASTIC_ETCD_CLIENT": strconv.Itoa(ports.ElasticEtcd),
		"ELASTIC_ETCD_SOCKET": st.ElasticEtcdSocket(),
		// Where pods reach the machine: the host IP, whose forwards lead
		// to the guard (and the API server and progress endpoint) only; a
		// pod's 127.0.0.1 is its own.
		"HOST": st.HostIP(),
		// python-etcd3's generated code needs the pure-Python protobuf.
		"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}
	for name, value := range env {
		if value == "0" || value == "" {
			t.Fatalf("the cluster's state has no port for %s: %+v", name, ports)
		}
	}
	probes := map[string]string{"etcd-probe": etcdProbe, "elastic-etcd-probe": elasticEtcdProbe}
	for name, script := range probes {
		createProbePod(t, pj, ns, name, script, env)
	}
	logs := map[string]string{}
	for name := range probes {
		phase := awaitPodEnd(t, pj, ns, name).Status.Phase
		logs[name] = podLog(t, pj, ns, name)
		t.Logf("%s reports:\n%s", name, logs[name])
		if phase != corev1.PodSucceeded {
			t.Errorf("%s ended %s", name, phase)
		}
	}
	var refused []string
	for _, etcd := range []string{"etcd", "elastic-etcd"} {
		refused = append(refused, "REFUSED "+etcd+"-peer-members-http", "REFUSED "+etcd+"-peer-members-https", "REFUSED "+etcd+"-peer-forged-raft")
	}
	refused = append(refused, "REFUSED etcd-client-http", "REFUSED etcd-client-https", "REFUSED elastic-etcd-socket", "REFUSED elastic-etcd-gateway")
	wantLines(t, logs["etcd-probe"], refused)
	wantLines(t, logs["elastic-etcd-probe"], []string{"PERMISSION_DENIED put", "PERMISSION_DENIED get",
		"PERMISSION_DENIED member-add", "PERMISSION_DENIED member-list", "PERMISSION_DENIED snapshot",
		"PERMISSION_DENIED auth-enable", "PERMISSION_DENIED move-leader", "PERMISSION_DENIED status"})
	if membersAfter := elasticEtcdMembers(t, st); !slices.Equal(membersAfter, membersBefore) {
		t.Errorf("the elastic etcd's members changed: %v before the probes, %v after", membersBefore, membersAfter)
	}
}

// createProbePod runs script with the Paddle 3.0.0 image's Python in a pod
// of ns, with env.
func createProbePod(t *testing.T, pj *client.Client, ns, name, script string, env map[string]string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "probe", Image: "paddlepaddle/paddle:3.0.0", Command: []string{"python3", "-c", script},
			}},
		},
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: k, Value: env[k]})
	}
	if _, err := pj.Clientset().CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wantLines checks that log reports each of lines (a probe prints
// "<verdict> <name> (<how>)").
func wantLines(t *testing.T, log string, lines []string) {
	t.Helper()
	for _, line := range lines {
		if !strings.Contains(log, line+" (") {
			t.Errorf("the probe did not report %q", line)
		}
	}
}

// elasticEtcdMembers are the elastic etcd's members (name and peer URLs),
// as etcd itself reports them on its socket, through its JSON gateway.
func elasticEtcdMembers(t *testing.T, st *localcluster.State) []string {
	t.Helper()
	socket := st.ElasticEtcdSocket()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		},
	}}
	resp, err := client.Post("http://elastic-etcd/v3/cluster/member/list", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("asking the elastic etcd on %s for its members: %v", socket, err)
	}
	defer resp.Body.Close()
	var list struct {
		Members []struct {
			ID        string   `json:"ID"`
			Name      string   `json:"name"`
			PeerURLs  []string `json:"peerURLs"`
			IsLearner bool     `json:"isLearner"`
		} `json:"members"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the elastic etcd's member list: %s, %v", resp.Status, err)
	}
	var members []string
	for _, m := range list.Members {
		members = append(members, fmt.Sprintf("%s %s %v learner=%t", m.ID, m.Name, m.PeerURLs, m.IsLearner))
	}
	if len(members) == 0 {
		t.Fatal("the elastic etcd lists no member")
	}
	return members
}
