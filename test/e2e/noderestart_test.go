package e2e

import (
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// Node restarts are failures, not re-runs: the local node killed mid-job
// (SIGKILL, its pods' processes die with it) comes back, reports the pods it
// had started Failed with reason NodeRestarted and exit code 137, and the
// job's restart policy (ExitCode: 137 is retryable) recreates them; the
// collective ResNet example resumes from its checkpoint and ends as well as
// an undisturbed run.
func TestNodeRestarts(t *testing.T) {
	pj := suiteClient
	_, logs := runReadingLogs(t, pj, restartableResNet(t, "calm"))
	calm := parseCollective(t, "calm-worker-0", logs["calm-worker-0"])

	t.Run("the node is killed mid-job", func(t *testing.T) {
		checkNodeKilledMidJob(t, pj, calm)
	})
	t.Run("the job's endpoints change during a node restart", func(t *testing.T) {
		checkEndpointsChangeDuringANodeRestart(t, pj, calm)
	})
}

// checkNodeKilledMidJob kills the node while a job trains: every pod the
// restart failed is counted and recreated, and the job resumes to learn
// what the calm run learned.
func checkNodeKilledMidJob(t *testing.T, pj *client.Client, calm collectiveReport) {
	job := restartableResNet(t, "killed")
	job.Namespace = newNamespace(t, pj)
	failures := recordFailedPods(t, pj, job.Namespace)
	createJob(t, pj, job)
	waitLog(t, pj, job.Namespace, "killed-worker-0", regexp.MustCompile(`epoch 2/\d+: `))
	started := podUIDs(t, pj, job)
	killNode(t)

	got, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		dumpJob(t, pj, job.Namespace, job.Name)
		t.Fatal(err)
	}
	mustComplete(t, pj, got)
	checkNodeRestartFailures(t, failures(), started)
	if got.Status.RestartCount != int32(len(started)) {
		t.Errorf("restartCount %d, want %d: one per pod the restart failed", got.Status.RestartCount, len(started))
	}
	for name, uid := range podUIDs(t, pj, got) {
		if uid == started[name] {
			t.Errorf("%s was not recreated", name)
		}
	}
	checkResumedJob(t, pj, got, calm)
}

// checkEndpointsChangeDuringANodeRestart: the endpoints change during a
// node restart. A pod waiting for them when the node is killed runs again
// on its own address, while its peer, recreated meanwhile, gets a new one;
// the waiting pod gets the new version and Paddle sees the new addresses.
// The template's scheduling gate lets the test place each pod when it
// wants (the operator's recreations carry the gate too).
func checkEndpointsChangeDuringANodeRestart(t *testing.T, pj *client.Client, calm collectiveReport) {
	job := restartableResNet(t, "moved")
	job.Spec.Worker.Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "e2e.paddlejob.io/hold"}}
	job.Namespace = newNamespace(t, pj)
	failures := recordFailedPods(t, pj, job.Namespace)
	createJob(t, pj, job)
	w0, w1 := "moved-worker-0", "moved-worker-1"
	ungate(t, pj, job.Namespace, w0)
	ungate(t, pj, job.Namespace, w1)
	waitLog(t, pj, job.Namespace, w0, regexp.MustCompile(`epoch 1/\d+: `))
	firstVersion := endpointsVersion(t, pj, job)
	started := podUIDs(t, pj, job)

	// The first restart fails both pods; they are recreated, gated.
	killNode(t)
	recreated := waitRecreated(t, pj, job, started)
	checkNodeRestartFailures(t, failures(), started)

	// Worker 0 is placed and waits for endpoints worker 1 cannot have
	// while it is gated.
	ungate(t, pj, job.Namespace, w0)
	waiting := waitForEndpointsWait(t, pj, job.Namespace, w0)
	t.Logf("%s waits for the endpoints on %s", w0, waiting.Status.PodIP)

	// The second restart comes while it waits; worker 1 is placed
	// meanwhile.
	killNode(t, func() { ungate(t, pj, job.Namespace, w1) })

	got, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		dumpJob(t, pj, job.Namespace, job.Name)
		t.Fatal(err)
	}
	mustComplete(t, pj, got)
	if got.Status.RestartCount != int32(len(started)) {
		t.Errorf("restartCount %d, want %d: the first restart failed both pods, the second none", got.Status.RestartCount, len(started))
	}
	pods := map[string]corev1.Pod{}
	final, err := pj.Pods(context.Background(), got.Namespace, got.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range final {
		pods[p.Name] = p
	}
	if p := pods[w0]; p.UID != recreated[w0] || p.Status.PodIP != waiting.Status.PodIP {
		t.Errorf("%s after the second restart: uid %s on %s; want it run again (uid %s) on its own address %s",
			w0, p.UID, p.Status.PodIP, recreated[w0], waiting.Status.PodIP)
	}
	if _, failed := failures()[recreated[w0]]; failed {
		t.Errorf("%s, waiting when the node restarted, was failed", w0)
	}
	if pods[w1].Status.PodIP == pods[w0].Status.PodIP {
		t.Errorf("%s got %s's address %s", w1, w0, pods[w1].Status.PodIP)
	}
	if v := endpointsVersion(t, pj, got); v == firstVersion || pods[w0].Annotations[paddlev1.AnnotationEndpoints] != v {
		t.Errorf("endpoints version %q (first %q); %s was given %q", v, firstVersion, w0, pods[w0].Annotations[paddlev1.AnnotationEndpoints])
	}
	logs := checkResumedJob(t, pj, got, calm)
	checkRanksOnTheirPodsAddresses(t, logs, pods, w0, w1)
}

// checkRanksOnTheirPodsAddresses checks what Paddle was told, from the
// pods' logs: each rank's endpoint, at its last start, is on its pod's
// address now.
func checkRanksOnTheirPodsAddresses(t *testing.T, logs map[string]string, pods map[string]corev1.Pod, names ...string) {
	t.Helper()
	for _, pod := range names {
		ms := rankLine.FindAllStringSubmatch(logs[pod], -1)
		if len(ms) == 0 {
			continue // checkResumedJob reported it
		}
		m := ms[len(ms)-1] // the last start
		if !strings.HasPrefix(m[3], pods[pod].Status.PodIP+":") {
			t.Errorf("%s: Paddle says rank %s is at %s, want an endpoint on %s", pod, m[1], m[3], pods[pod].Status.PodIP)
		}
	}
}

// restartableResNet is the collective example with restartPolicy ExitCode,
// six epochs and a checkpoint directory of its own.
func restartableResNet(t *testing.T, name string) *paddlev1.PaddleJob {
	t.Helper()
	job := loadJob(t, "examples/jobs/resnet.yaml")
	job.Name = name
	outputDir(t, job)
	job.Spec.Worker.RestartPolicy = paddlev1.RestartPolicyExitCode
	c := &job.Spec.Worker.Template.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: "EPOCHS", Value: "6"})
	return job
}

// checkResumedJob asserts what the ranks of a ResNet job that restarted
// reported through Paddle (checkCollectiveJob), that rank 0 resumed from the
// checkpoint, and that it ended within 0.05 test accuracy of an undisturbed
// run. It returns the pods' logs.
func checkResumedJob(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob, calm collectiveReport) map[string]string {
	t.Helper()
	logs := jobLogs(t, pj, job)
	rep := checkCollectiveJob(t, job, logs)
	first := job.Name + "-worker-0"
	if !strings.Contains(logs[first], "resumed after epoch") {
		t.Errorf("rank 0 did not resume from its checkpoint:\n%s", tail(logs[first]))
	}
	t.Logf("test accuracy %.3f after the node restart, %.3f undisturbed", rep.Accuracy, calm.Accuracy)
	if math.Abs(rep.Accuracy-calm.Accuracy) > 0.05 {
		t.Errorf("test accuracy %.3f is more than 0.05 from the undisturbed %.3f", rep.Accuracy, calm.Accuracy)
	}
	return logs
}

// killNode kills the suite cluster's node with SIGKILL, as a crash would,
// runs meanwhile (while it is down), and waits until its supervisor has
// started it again.
func killNode(t *testing.T, meanwhile ...func()) {
	t.Helper()
	killNodeOf(t, opts, localcluster.NodeName, meanwhile...)
}

// killNodeOf is killNode for node name of the cluster of options o.
func killNodeOf(t *testing.T, o localcluster.Options, name string, meanwhile ...func()) {
	t.Helper()
	before := component(t, o, name)
	if before.PID == 0 || before.State != "running" {
		t.Fatalf("%s is not running: %+v", name, before)
	}
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing %s (pid %d): %v", name, before.PID, err)
	}
	for _, f := range meanwhile {
		f()
	}
	poll(t, time.Minute, name+" comes back", func() (bool, string) {
		now := component(t, o, name)
		return now.Restarts == before.Restarts+1 && now.State == "running" && now.PID != before.PID,
			fmt.Sprintf("pid %d, %d restarts, %s, last exit %s", now.PID, now.Restarts, now.State, now.LastExit)
	})
}

// recordFailedPods watches a namespace's pods until the test ends and
// returns what it saw so far: the first Failed status of each pod, by UID.
// The operator deletes a failed pod it recreates at once: polling could miss
// it.
func recordFailedPods(t *testing.T, pj *client.Client, ns string) func() map[types.UID]corev1.Pod {
	t.Helper()
	var mu sync.Mutex
	seen := map[types.UID]corev1.Pod{}
	watchPods(t, pj, ns, func(p *corev1.Pod) {
		if p.Status.Phase != corev1.PodFailed {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := seen[p.UID]; !ok {
			seen[p.UID] = *p.DeepCopy()
		}
	})
	return func() map[types.UID]corev1.Pod {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	}
}

// watchPods calls record, from one goroutine, with every pod of a namespace
// it sees added, changed or deleted, until the test ends.
func watchPods(t *testing.T, pj *client.Client, ns string, record func(*corev1.Pod)) {
	t.Helper()
	handle := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok {
			record(p)
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(pj.Clientset(), 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: handle, UpdateFunc: func(_, obj any) { handle(obj) }, DeleteFunc: handle,
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		t.Fatal("the pod watch did not sync")
	}
}

// checkNodeRestartFailures asserts that each of the started pods (UID by
// name) was reported Failed by the restarted node: reason NodeRestarted, its
// training container killed with exit code 137.
func checkNodeRestartFailures(t *testing.T, failed map[types.UID]corev1.Pod, started map[string]types.UID) {
	t.Helper()
	for name, uid := range started {
		p, ok := failed[uid]
		if !ok {
			t.Errorf("%s (uid %s) was never reported Failed", name, uid)
			continue
		}
		var killed *corev1.ContainerStateTerminated
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "paddle" {
				killed = cs.State.Terminated
			}
		}
		if p.Status.Reason != "NodeRestarted" || killed == nil || killed.ExitCode != 137 {
			t.Errorf("%s was reported Failed with reason %q (%s), container: %+v; want NodeRestarted, exit code 137",
				name, p.Status.Reason, p.Status.Message, killed)
			continue
		}
		t.Logf("%s: Failed, %s: %s; container exit code %d (%s)", name, p.Status.Reason, p.Status.Message, killed.ExitCode, killed.Reason)
	}
}

// podUIDs are the UIDs of the job's pods, by name.
func podUIDs(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for name, p := range jobPods(t, pj, job) {
		out[name] = p.UID
	}
	return out
}

// waitRecreated waits until every pod of the job is a new one (not of
// before) and returns their UIDs.
func waitRecreated(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob, before map[string]types.UID) map[string]types.UID {
	t.Helper()
	var now map[string]types.UID
	poll(t, 2*time.Minute, "the failed pods are recreated", func() (bool, string) {
		now = podUIDs(t, pj, job)
		for _, name := range podNames(job) {
			if uid, ok := now[name]; !ok || uid == before[name] {
				return false, fmt.Sprintf("pods %v, before %v", now, before)
			}
		}
		return true, fmt.Sprintf("%v", now)
	})
	return now
}

// ungate removes the scheduling gates of a pod (once it exists), so the
// scheduler places it.
func ungate(t *testing.T, pj *client.Client, ns, pod string) {
	t.Helper()
	patch := []byte(`{"spec":{"schedulingGates":null}}`)
	poll(t, time.Minute, "ungating "+pod, func() (bool, string) {
		_, err := pj.Clientset().CoreV1().Pods(ns).Patch(context.Background(), pod, types.MergePatchType, patch, metav1.PatchOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// waitForEndpointsWait waits until a pod has its address and waits in its
// wait-for-endpoints init container.
func waitForEndpointsWait(t *testing.T, pj *client.Client, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	poll(t, time.Minute, name+" waits for its endpoints", func() (bool, string) {
		p, err := pj.Clientset().CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		for _, cs := range p.Status.InitContainerStatuses {
			if cs.Name == paddlev1.ReservedInitContainer {
				return p.Status.PodIP != "" && cs.State.Running != nil, fmt.Sprintf("%s on %q:%s", p.Status.Phase, p.Status.PodIP, statusLine(p))
			}
		}
		return false, fmt.Sprintf("%s on %q:%s", p.Status.Phase, p.Status.PodIP, statusLine(p))
	})
	return pod
}

// endpointsVersion is the version of the job's published endpoints.
func endpointsVersion(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) string {
	t.Helper()
	cm, err := pj.Clientset().CoreV1().ConfigMaps(job.Namespace).Get(context.Background(), job.Name+"-endpoints", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["version"]
}
