package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/testutil"
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
func probeDNSSquatter(t *testing.T, pj *client.Client) {
	ctx := context.Background()
	attacker, ans := namespaceUser(t, pj)
	nodeName := clusterNodes(t, pj)[0]
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
		ObjectMeta: metav1.ObjectMeta{Name: "dns-victim", Namespace: newNamespace(t, pj)},
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
	done, log := runPodToEnd(t, pj, victim)
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
	if got := strings.Count(podLog(t, pj, ans, squatter.Name), "QUERY"); got != 0 {
		t.Errorf("the hostNetwork squatter received %d of the victim's DNS queries, want none", got)
	}
	if err := attacker.Clientset().CoreV1().Pods(ans).Delete(ctx, squatter.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the squatter: %v", err)
	}
}

// awaitLogLine waits for a pod of c's to log a line holding want (while it
// runs, or in the log it ended with) and returns its log so far.
func awaitLogLine(t *testing.T, c *client.Client, ns, name, want string) string {
	t.Helper()
	var log string
	poll(t, 2*time.Minute, "pod "+name+" logs "+want, func() (bool, string) {
		p, err := c.Clientset().CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		b, err := c.Clientset().CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(context.Background())
		if err != nil {
			return false, fmt.Sprintf("%s; logs: %v", statusLine(p), err)
		}
		log = string(b)
		if strings.Contains(log, want) {
			return true, statusLine(p)
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			t.Fatalf("pod %s ended %s without logging %q:%s\n%s", name, p.Status.Phase, want, statusLine(p), log)
		}
		return false, statusLine(p)
	})
	return log
}

// etcdVictim is job B's worker: it writes a key of its job's in the
// elastic etcd, reads it back, prints WROTE, and stays.
const etcdVictim = `import os, time, etcd3
host, port = os.environ["PADDLE_ELASTIC_SERVER"].rsplit(":", 1)
c = etcd3.client(host=host, port=int(port))
key = "/paddle/%s/secret" % os.environ["PADDLE_ELASTIC_JOB_ID"]
c.put(key, b"job B's value")
print("WROTE", key, c.get(key)[0], flush=True)
os.execvp("sleep", ["sleep", "3600"])
`

// etcdThief is job A's worker: it tries job B's keys (VICTIM_JOB_ID) every
// way the launcher's client can, printing REFUSED or OPEN with what came
// back for each, and uses its own job's key, printing OWN.
const etcdThief = `import os, etcd3
host, port = os.environ["PADDLE_ELASTIC_SERVER"].rsplit(":", 1)
c = etcd3.client(host=host, port=int(port))
victim = "/paddle/" + os.environ["VICTIM_JOB_ID"]
def attempt(what, fn):
    try:
        print("OPEN %s: %r" % (what, fn()), flush=True)
    except Exception as e:
        code = e.code() if hasattr(e, "code") else type(e).__name__
        print("REFUSED %s: %s" % (what, code), flush=True)
attempt("get", lambda: c.get(victim + "/secret")[0])
attempt("get_prefix of the victim", lambda: [m.key for _, m in c.get_prefix(victim)])
attempt("get_prefix of every job", lambda: [m.key for _, m in c.get_prefix("/paddle/")])
attempt("get_all", lambda: [m.key for _, m in c.get_all()])
attempt("put", lambda: c.put(victim + "/secret", b"forged"))
attempt("delete_prefix", lambda: c.delete_prefix(victim).deleted)
own = "/paddle/%s/mine" % os.environ["PADDLE_ELASTIC_JOB_ID"]
c.put(own, b"ours")
print("OWN", c.get(own)[0], flush=True)
`

// probeEtcdOtherJob: a pod of a tenant's elastic PaddleJob (A) tries to
// read, list, overwrite and delete another namespace's job's (B's) keys in
// the elastic etcd, through the guard: every attempt is refused with
// PERMISSION_DENIED, while its own job's key works.
func probeEtcdOtherJob(t *testing.T, pj *client.Client) {
	ctx := context.Background()
	victimNS := newNamespace(t, pj)
	victim := testutil.MakePaddleJob("victim", victimNS).Workers(1).Image("paddlepaddle/paddle:3.0.0").Elastic(1, 1).
		Command(paddlev1.ReplicaWorker, "python3", "-c", etcdVictim).
		Env(paddlev1.ReplicaWorker, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python").Obj()
	createJob(t, pj, victim)
	created, err := pj.Get(ctx, victimNS, victim.Name)
	if err != nil {
		t.Fatal(err)
	}
	victimID := victimNS + "_" + victim.Name + "_" + string(created.UID)
	wrote := awaitLogLine(t, pj, victimNS, victim.Name+"-worker-0", "WROTE")
	t.Logf("job B: %s", strings.TrimSpace(wrote))

	attacker, ans := paddleJobUser(t, pj)
	thief := testutil.MakePaddleJob("thief", ans).Workers(1).Image("paddlepaddle/paddle:3.0.0").Elastic(1, 1).
		Command(paddlev1.ReplicaWorker, "python3", "-c", etcdThief).
		Env(paddlev1.ReplicaWorker, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python").
		Env(paddlev1.ReplicaWorker, "VICTIM_JOB_ID", victimID).
		RolePolicy(paddlev1.ReplicaWorker, paddlev1.RestartPolicyNever).Obj()
	if _, err := attacker.Create(ctx, thief); err != nil {
		t.Fatalf("the tenant creating its PaddleJob: %v", err)
	}
	log := awaitLogLine(t, pj, ans, thief.Name+"-worker-0", "OWN")
	t.Logf("job A's pod:\n%s", log)
	for _, what := range []string{"get", "get_prefix of the victim", "get_prefix of every job", "get_all", "put", "delete_prefix"} {
		if !strings.Contains(log, "REFUSED "+what+": StatusCode.PERMISSION_DENIED") {
			t.Errorf("job A's pod, %s on job B's keys: not refused with PERMISSION_DENIED", what)
		}
	}
	if strings.Contains(log, "OPEN ") {
		t.Errorf("job A's pod reached job B's keys")
	}
	if !strings.Contains(log, "OWN b'ours'") {
		t.Errorf("job A's pod could not use its own job's key")
	}
}

// probeMemoryAboveTheNode: a tenant's container asking limits.memory 100Gi
// (more than the machine has) runs with its cgroup's memory limit at most
// the node's allocatable memory and the host's, and an event says it was
// capped.
func probeMemoryAboveTheNode(t *testing.T, pj *client.Client) {
	ctx := context.Background()
	tenant, ns := namespaceUser(t, pj)
	nodeName := clusterNodes(t, pj)[0]
	n, err := pj.Clientset().CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The suite's nodes advertise more than the host has (--capacity):
	// what the node can give is the lower of the two.
	allocatable := min(n.Status.Allocatable.Memory().Value(), hostMemory(t))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "greedy", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, NodeSelector: onNode(nodeName),
			Containers: []corev1.Container{{
				Name: "greedy", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo RUNNING; exec sleep 3600"},
				Resources: corev1.ResourceRequirements{
					// Requests small enough to schedule; the limit far above.
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Gi")},
				},
			}},
		},
	}
	created, err := tenant.Clientset().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the tenant creating its pod: %v", err)
	}
	awaitLogLine(t, tenant, ns, pod.Name, "RUNNING")
	limit, file := containerMemoryLimit(t, string(created.UID)+"-greedy-")
	t.Logf("%s: %d bytes (the node's allocatable memory, at most the host's: %d)", file, limit, allocatable)
	if limit <= 0 || limit > allocatable {
		t.Errorf("the container's cgroup memory limit is %d bytes, want at most the node's allocatable and the host's memory, %d", limit, allocatable)
	}
	events, err := pj.Clientset().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name + ",reason=MemoryLimitCapped"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 {
		t.Errorf("no MemoryLimitCapped event for the pod")
	} else {
		t.Logf("event: %s", events.Items[0].Message)
	}
	if err := tenant.Clientset().CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the pod: %v", err)
	}
}

// containerMemoryLimit reads the memory limit of the host's cgroup whose
// name begins with prefix (the node names a run's group
// <pod UID>-<container>-<run>): memory.max in cgroup v2, memory.limit_in_bytes
// in the v1 memory hierarchy.
func containerMemoryLimit(t *testing.T, prefix string) (int64, string) {
	t.Helper()
	root, file := "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		root, file = "/sys/fs/cgroup", "memory.max"
	}
	var found string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), prefix) {
			found = filepath.Join(path, file)
			return fs.SkipAll
		}
		return nil
	})
	if err != nil || found == "" {
		t.Fatalf("no cgroup named %s* under %s (%v)", prefix, root, err)
	}
	b, err := os.ReadFile(found)
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(b))
	if v == "max" {
		return -1, found
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s: %q", found, v)
	}
	return n, found
}

// probeEmptyDirEviction: a tenant's pod writing 50 MB into an emptyDir of
// sizeLimit 10Mi is evicted, as a kubelet evicts it: Failed, reason
// Evicted, the kubelet's message.
func probeEmptyDirEviction(t *testing.T, pj *client.Client) {
	ctx := context.Background()
	tenant, ns := namespaceUser(t, pj)
	limit := resource.MustParse("10Mi")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "filler", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			Volumes:       []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}}},
			Containers: []corev1.Container{{
				Name: "filler", Image: "busybox:1.36",
				Command:      []string{"sh", "-c", "dd if=/dev/zero of=/scratch/fill bs=1M count=50 && echo WROTE && exec sleep 3600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}},
			}},
		},
	}
	if _, err := tenant.Clientset().CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the tenant creating its pod: %v", err)
	}
	done := awaitPodEnd(t, pj, ns, pod.Name)
	t.Logf("the filler ended %s: %s %q", done.Status.Phase, done.Status.Reason, done.Status.Message)
	if want := `Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". `; done.Status.Phase != corev1.PodFailed ||
		done.Status.Reason != "Evicted" || done.Status.Message != want {
		t.Errorf("the pod ended %s, %s, %q; want Failed, Evicted, %q", done.Status.Phase, done.Status.Reason, done.Status.Message, want)
	}
}

// hostMemory is MemTotal of /proc/meminfo, in bytes: the machine the
// cluster's nodes share.
func hostMemory(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}
