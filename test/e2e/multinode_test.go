package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/fsutil"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// Several nodes (docs/local-cluster.md#nodes): `up --nodes 2` starts two
// node processes, each with its own network namespace, IP and pod CIDR,
// joined by the cluster network. Pods reach each other across them by IP
// and by DNS; the scheduler places pods by anti-affinity and topology; Host
// intranet puts each pod on its node's IP; and a node whose process is
// killed is a lost node: its pods fail, and the job's restart policy brings
// them back.
func TestTwoNodes(t *testing.T) {
	t.Parallel()
	home, err := os.MkdirTemp("", "pj-nodes-") // short: the home holds Unix sockets
	if err != nil {
		t.Fatal(err)
	}
	o := opts
	o.Home, o.Nodes = home, 2
	_, pj := withCluster(t, o)
	nodes := []string{localcluster.NodeName, localcluster.NodeName + "-2"}

	t.Run("each node has its name, IP and pod network", func(t *testing.T) { checkTwoNodes(t, pj, o, nodes) })
	t.Run("pods reach each other across nodes", func(t *testing.T) { probePodNetwork(t, pj) })
	t.Run("an all-reduce in Host intranet, one worker per node", func(t *testing.T) { checkAllReduceAcrossNodes(t, pj, nodes) })
	t.Run("a parameter-server job spreads over both nodes", func(t *testing.T) { checkPSJobSpreads(t, pj, nodes) })
	t.Run("a lost node's pods restart under the job's policy", func(t *testing.T) { checkLostNode(t, pj, o, nodes) })
}

// checkTwoNodes checks the Nodes as the API shows them and as `paddlejob
// status` lists them: Ready, labelled with their names, each with its own
// InternalIP and pod CIDR.
func checkTwoNodes(t *testing.T, pj *client.Client, o localcluster.Options, names []string) {
	list, err := pj.Clientset().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ips := map[string]string{}
	for _, n := range list.Items {
		if n.Labels[corev1.LabelHostname] != n.Name {
			t.Errorf("node %s is labelled %s=%q", n.Name, corev1.LabelHostname, n.Labels[corev1.LabelHostname])
		}
		if want := map[string]string{names[0]: "10.244.0.0/20", names[1]: "10.244.16.0/20"}[n.Name]; n.Spec.PodCIDR != want {
			t.Errorf("node %s has pod CIDR %q, want %s", n.Name, n.Spec.PodCIDR, want)
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ips[n.Name] = a.Address
			}
		}
	}
	want := map[string]string{names[0]: "172.18.0.2", names[1]: "172.18.0.3"}
	if fmt.Sprint(ips) != fmt.Sprint(want) {
		t.Errorf("the nodes' InternalIPs are %v, want %v", ips, want)
	}
	rep, err := localcluster.Report(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, n := range rep.Nodes {
		listed = append(listed, fmt.Sprintf("%s %s %s %s", n.Name, n.IP, n.PodCIDR, n.State))
	}
	wantListed := []string{names[0] + " 172.18.0.2 10.244.0.0/20 Ready", names[1] + " 172.18.0.3 10.244.16.0/20 Ready"}
	if !slices.Equal(listed, wantListed) {
		t.Errorf("paddlejob status lists the nodes %q, want %q", listed, wantListed)
	}
}

// onePerNode makes a role's pods refuse to share a node with another pod of
// their job (required anti-affinity on the node's hostname).
func onePerNode(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType) {
	job.Spec.Replicas(rt).Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{paddlev1.LabelJobName: job.Name}},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
}

// allReduceLine is what each rank of allreduce.py reports.
var allReduceLine = regexp.MustCompile(`all_reduce rank=(\d+) sum=\[([0-9., ]+)\]`)

// checkAllReduceAcrossNodes runs a collective job of two workers in Host
// intranet that may not share a node: each runs on its own node, with its
// node's IP, and Paddle's all-reduce gives both ranks the sum of both.
func checkAllReduceAcrossNodes(t *testing.T, pj *client.Client, nodes []string) {
	dir := podsDir(t)
	if err := fsutil.CopyTree(filepath.Join(testenv.RepoRoot(), "test/e2e/testdata/allreduce"), dir); err != nil {
		t.Fatal(err)
	}
	job := loadJob(t, "examples/jobs/resnet.yaml")
	job.Name = "allreduce"
	job.Spec.Intranet = paddlev1.IntranetHost
	spec := &job.Spec.Worker.Template.Spec
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "program", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}})
	c := &spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "program", MountPath: "/program", ReadOnly: true})
	c.Command, c.Args = []string{"python3", "-m", "paddle.distributed.launch", "/program/allreduce.py"}, nil
	outputDir(t, job)
	onePerNode(job, paddlev1.ReplicaWorker)
	done, logs := runReadingLogs(t, pj, job)

	pods := jobPods(t, pj, done)
	checkOnEveryNode(t, pods, nodes)
	for name, p := range pods {
		if !p.Spec.HostNetwork || p.Status.PodIP != p.Status.HostIP {
			t.Errorf("%s: hostNetwork %v, pod IP %s, node IP %s; want the node's IP in Host intranet", name, p.Spec.HostNetwork, p.Status.PodIP, p.Status.HostIP)
		}
	}
	checkRanksOnTheirPodsAddresses(t, logs, pods, podNames(done)...)
	ranks := ranksReported(t, logs)
	if len(ranks) != 2 || ranks[0] != 2 || ranks[1] != 2 {
		t.Errorf("ranks and world sizes reported: %v, want ranks 0 and 1 of 2", ranks)
	}
	for pod, log := range logs {
		m := allReduceLine.FindStringSubmatch(log)
		if m == nil {
			t.Errorf("%s reported no all-reduce:\n%s", pod, tail(log))
			continue
		}
		if sum := strings.ReplaceAll(m[2], " ", ""); sum != "3.0,30.0" {
			t.Errorf("%s: rank %s's all-reduce gave [%s], want [3.0, 30.0]: 1+2 and 10+20", pod, m[1], m[2])
		}
	}
}

// checkPSJobSpreads runs the wide & deep PS job with its pods spread evenly
// over the nodes (a topology spread constraint on the hostname): both nodes
// run a pserver and a trainer, and the job learns as on one node.
func checkPSJobSpreads(t *testing.T, pj *client.Client, nodes []string) {
	job := loadJob(t, "examples/jobs/wide-and-deep.yaml")
	job.Name = "spread"
	outputDir(t, job)
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		job.Spec.Replicas(rt).Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{paddlev1.LabelJobName: job.Name, paddlev1.LabelReplicaType: string(rt)}},
		}}
	}
	// The pods' nodes, seen while they run: the job deletes its pods when
	// it completes.
	job.Namespace = newNamespace(t, pj)
	var mu sync.Mutex
	placed := map[string]corev1.Pod{}
	watchPods(t, pj, job.Namespace, func(p *corev1.Pod) {
		if p.Spec.NodeName != "" {
			mu.Lock()
			defer mu.Unlock()
			placed[p.Name] = *p.DeepCopy()
		}
	})
	done, logs := runInNamespace(t, pj, job)
	checkPSJob(t, done, logs)
	mu.Lock()
	defer mu.Unlock()
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		role := map[string]corev1.Pod{}
		for i := range job.Spec.ReplicaCount(rt) {
			name := paddlev1.PodName(job.Name, rt, i)
			if p, ok := placed[name]; ok {
				role[name] = p
			}
		}
		checkOnEveryNode(t, role, nodes)
	}
}

// checkLostNode kills the second node's process while the collective ResNet
// job trains with one worker per node and restartScope Job (collective
// training cannot go on without a rank): the pod on the lost node is
// reported Failed by the node when it comes back, the job restarts once,
// every pod is recreated, and rank 0 resumes from its checkpoint to the end.
func checkLostNode(t *testing.T, pj *client.Client, o localcluster.Options, nodes []string) {
	job := restartableResNet(t, "lost")
	job.Spec.RestartScope = paddlev1.RestartScopeJob
	onePerNode(job, paddlev1.ReplicaWorker)
	job.Namespace = newNamespace(t, pj)
	failures := recordFailedPods(t, pj, job.Namespace)
	createJob(t, pj, job)
	waitLog(t, pj, job.Namespace, "lost-worker-0", regexp.MustCompile(`epoch 2/\d+: `))
	started := podUIDs(t, pj, job)
	lost := map[string]types.UID{}
	for name, p := range jobPods(t, pj, job) {
		if p.Spec.NodeName == nodes[1] {
			lost[name] = p.UID
		}
	}
	if len(lost) != 1 {
		t.Fatalf("pods on %s: %v, want one worker", nodes[1], lost)
	}
	killNodeOf(t, o, nodes[1])

	got, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		dumpJob(t, pj, job.Namespace, job.Name)
		t.Fatal(err)
	}
	mustComplete(t, pj, got)
	checkNodeRestartFailures(t, failures(), lost)
	if got.Status.RestartCount != 1 {
		t.Errorf("restartCount %d, want 1: the lost pod restarts the job once", got.Status.RestartCount)
	}
	for name, uid := range podUIDs(t, pj, got) {
		if uid == started[name] {
			t.Errorf("%s was not recreated", name)
		}
	}
	logs := jobLogs(t, pj, got)
	checkCollectiveJob(t, got, logs)
	if !strings.Contains(logs["lost-worker-0"], "resumed after epoch") {
		t.Errorf("rank 0 did not resume from its checkpoint:\n%s", tail(logs["lost-worker-0"]))
	}
	checkOnEveryNode(t, jobPods(t, pj, got), nodes)
}

// jobPods are the job's pods, by name.
func jobPods(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) map[string]corev1.Pod {
	t.Helper()
	pods, err := pj.Pods(context.Background(), job.Namespace, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods {
		out[p.Name] = p
	}
	return out
}

// checkOnEveryNode checks that the pods run on every node, none on another.
func checkOnEveryNode(t *testing.T, pods map[string]corev1.Pod, nodes []string) {
	t.Helper()
	on := map[string][]string{}
	for name, p := range pods {
		on[p.Spec.NodeName] = append(on[p.Spec.NodeName], name)
	}
	for _, n := range nodes {
		if len(on[n]) == 0 {
			t.Errorf("no pod runs on %s: %v", n, on)
		}
	}
	if len(on) != len(nodes) {
		t.Errorf("the pods run on %v, want the nodes %v", on, nodes)
	}
}
