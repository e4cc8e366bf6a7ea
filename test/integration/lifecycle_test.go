package integration

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func running(ip string) func(*testutil.PodWrapper) *testutil.PodWrapper {
	return func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Running(ip) }
}

func succeeded(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Succeeded() }

func failedWith(container string, code int32) func(*testutil.PodWrapper) *testutil.PodWrapper {
	return func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Failed(container, code) }
}

// runAll brings every pod of the job to Running with an IP, the way a kubelet
// would once the operator released them, and waits for phase Running.
func runAll(t *testing.T, ns, job string, names []string) {
	t.Helper()
	ips := map[string]string{}
	for i, n := range names {
		ips[n] = fmt.Sprintf("10.30.%d.%d", i/250, i%250+1)
	}
	assignIPs(t, ns, ips)
	releaseAll(t, ns, job, names)
	for _, n := range names {
		setPodStatus(t, ns, n, running(ips[n]))
	}
	waitForPhase(t, ns, job, paddlev1.PaddleJobRunning)
}

func TestPSJobCompletesAndStopsItsPServers(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t)
	job := testutil.MakePaddleJob("wd", ns).PS(2).Workers(2).CleanPodPolicy(paddlev1.CleanPodPolicyNever).Obj()
	createJob(t, job)
	names := podNames("wd", 2, 2, 0)
	waitForPods(t, ns, "wd", names...)
	waitForPhase(t, ns, "wd", paddlev1.PaddleJobStarting) // every pod exists, none runs
	runAll(t, ns, "wd", names)
	running := getJob(t, ns, "wd")
	if running.Status.StartTime == nil || !running.Status.IsConditionTrue(paddlev1.JobRunning) || running.Status.PS.Ready != "2/2" {
		t.Errorf("running status = %+v", running.Status)
	}

	setPodStatus(t, ns, "wd-worker-0", succeeded)
	setPodStatus(t, ns, "wd-worker-1", succeeded)
	done := waitForPhase(t, ns, "wd", paddlev1.PaddleJobCompleted)
	c := meta.FindStatusCondition(done.Status.Conditions, paddlev1.JobSucceeded)
	if c == nil || c.Status != "True" || c.Reason != "AllWorkersSucceeded" || done.Status.CompletionTime == nil {
		t.Errorf("completed status = %+v", done.Status)
	}
	// The pservers were still running: they are stopped. Never keeps the workers.
	waitForPods(t, ns, "wd", "wd-worker-0", "wd-worker-1")
	waitForEvent(t, ns, "wd", "JobCompleted", "all 2 workers succeeded")
	waitForEvent(t, ns, "wd", "SuccessfulCreatePod", "Created 4 pods")
	waitForEvent(t, ns, "wd", "SuccessfulDeletePod", "wd-ps-0, wd-ps-1")
}

func TestWorkerFailureFailsTheJobNamingPodContainerAndExitCode(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t)
	job := testutil.MakePaddleJob("r", ns).Workers(3).CleanPodPolicy(paddlev1.CleanPodPolicyNever).Obj()
	createJob(t, job)
	names := podNames("r", 0, 3, 0)
	waitForPods(t, ns, "r", names...)
	runAll(t, ns, "r", names)
	setPodStatus(t, ns, "r-worker-1", failedWith("paddle", 3))

	failed := waitForPhase(t, ns, "r", paddlev1.PaddleJobFailed)
	c := meta.FindStatusCondition(failed.Status.Conditions, paddlev1.JobFailed)
	want := `pod r-worker-1: container "paddle" exited with code 3 (Error)`
	if c == nil || c.Reason != "PodFailed" || c.Message != want {
		t.Fatalf("Failed condition = %+v, want message %q", c, want)
	}
	if r := meta.FindStatusCondition(failed.Status.Conditions, paddlev1.JobRunning); r == nil || r.Status != "False" {
		t.Errorf("Running condition of a failed job = %+v", r)
	}
	// cleanPodPolicy Never keeps the failed pod; the still-running workers are stopped.
	waitForPods(t, ns, "r", "r-worker-1")
	waitForEvent(t, ns, "r", "JobFailed", want)
}

func TestCleanPodPolicyOnCompletionRemovesEveryPod(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t)
	// paddle-operator's example 5 spells it cleanPolicy: the deprecated alias works.
	job := testutil.MakePaddleJob("demo", ns).PS(1).Workers(2).Obj()
	job.Spec.CleanPolicy = paddlev1.CleanPodPolicyOnCompletion
	createJob(t, job)
	names := podNames("demo", 1, 2, 0)
	waitForPods(t, ns, "demo", names...)
	runAll(t, ns, "demo", names)
	setPodStatus(t, ns, "demo-ps-0", succeeded) // pservers may exit before the workers
	setPodStatus(t, ns, "demo-worker-0", succeeded)
	setPodStatus(t, ns, "demo-worker-1", succeeded)
	waitForPhase(t, ns, "demo", paddlev1.PaddleJobCompleted)
	waitForPods(t, ns, "demo")
}

func TestScalingARunningJob(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t)
	createJob(t, testutil.MakePaddleJob("sc", ns).Workers(2).Obj())
	names := podNames("sc", 0, 2, 0)
	waitForPods(t, ns, "sc", names...)
	runAll(t, ns, "sc", names)

	scale(t, ns, "sc", 3)
	waitForPods(t, ns, "sc", podNames("sc", 0, 3, 0)...)
	// The published lists still hold two workers: the new one must not start yet.
	if p := waitForPods(t, ns, "sc", podNames("sc", 0, 3, 0)...)["sc-worker-2"]; p.Annotations[paddlev1.AnnotationEndpoints] != "" {
		t.Fatalf("the new worker was released before it had an IP: %v", p.Annotations)
	}
	assignIPs(t, ns, map[string]string{"sc-worker-2": "10.30.0.9"})
	waitReleased(t, ns, "sc", "sc-worker-2")
	env, err := resolvedEnv(t, ns, "sc-worker-2")
	if err != nil {
		t.Fatal(err)
	}
	if env["PADDLE_TRAINER_ENDPOINTS"] != "10.30.0.1:23000,10.30.0.2:23000,10.30.0.9:23000" || env["PADDLE_TRAINERS_NUM"] != "3" {
		t.Errorf("endpoints after scaling up: %s (%s workers)", env["PADDLE_TRAINER_ENDPOINTS"], env["PADDLE_TRAINERS_NUM"])
	}
	setPodStatus(t, ns, "sc-worker-2", running("10.30.0.9"))
	eventually(t, "3/3 workers ready", func() (bool, error) {
		j := getJob(t, ns, "sc")
		return j.Status.Worker.Ready == "3/3" && j.Status.Phase == paddlev1.PaddleJobRunning, fmt.Errorf("%+v", j.Status.Worker)
	})

	scale(t, ns, "sc", 1)
	waitForPods(t, ns, "sc", "sc-worker-0")
	eventually(t, "endpoints recomputed for 1 worker", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: "sc-endpoints"}, cm); err != nil {
			return false, err
		}
		return cm.Data["PADDLE_TRAINER_ENDPOINTS"] == "10.30.0.1:23000" && cm.Data["PADDLE_TRAINERS_NUM"] == "1", fmt.Errorf("%v", cm.Data)
	})
	waitForEvent(t, ns, "sc", "SuccessfulDeletePod", "scaled down")
}

func TestOperatorRestartMidJobCreatesNoDuplicates(t *testing.T) {
	stop := startOperator(t)
	ns := newNamespace(t)
	createJob(t, testutil.MakePaddleJob("rs", ns).PS(1).Workers(3).Obj())
	names := podNames("rs", 1, 3, 0)
	before := waitForPods(t, ns, "rs", names...)
	assignIPs(t, ns, map[string]string{"rs-ps-0": "10.40.0.1", "rs-worker-0": "10.40.0.2"})
	stop()

	// While the operator is down, the rest of the pods get their IPs.
	assignIPs(t, ns, map[string]string{"rs-worker-1": "10.40.0.3", "rs-worker-2": "10.40.0.4"})
	startOperator(t)
	releaseAll(t, ns, "rs", names)
	after := waitForPods(t, ns, "rs", names...)
	for n, p := range before {
		if after[n].UID != p.UID {
			t.Errorf("pod %s was recreated across the restart", n)
		}
	}
	for i, n := range names {
		setPodStatus(t, ns, n, running(fmt.Sprintf("10.40.0.%d", i+1)))
	}
	waitForPhase(t, ns, "rs", paddlev1.PaddleJobRunning)
	for i := 0; i < 3; i++ {
		setPodStatus(t, ns, paddlev1.PodName("rs", paddlev1.ReplicaWorker, i), succeeded)
	}
	waitForPhase(t, ns, "rs", paddlev1.PaddleJobCompleted)
	// The finished job stops its parameter server and keeps exactly the
	// three workers it created before the restart.
	finished := waitForPods(t, ns, "rs", podNames("rs", 0, 3, 0)...)
	for n, p := range finished {
		if before[n].UID != p.UID {
			t.Errorf("pod %s was recreated after completion", n)
		}
	}
}

func TestHostIntranetGivesEveryPodItsOwnPorts(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t)
	createJob(t, testutil.MakePaddleJob("h1", ns).PS(1).Workers(2).Intranet(paddlev1.IntranetHost).Obj())
	createJob(t, testutil.MakePaddleJob("h2", ns).Workers(2).Intranet(paddlev1.IntranetHost).Obj())
	pods := waitForPods(t, ns, "h1", podNames("h1", 1, 2, 0)...)
	for k, v := range waitForPods(t, ns, "h2", podNames("h2", 0, 2, 0)...) {
		pods[k] = v
	}
	seen := map[int32]string{}
	for name, p := range pods {
		if !p.Spec.HostNetwork {
			t.Errorf("%s is not on the host network", name)
		}
		hostPorts := 0
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				if port.HostPort == 0 {
					continue
				}
				hostPorts++
				if other, dup := seen[port.HostPort]; dup {
					t.Errorf("port %d is held by %s and %s", port.HostPort, other, name)
				}
				seen[port.HostPort] = name
			}
		}
		if hostPorts != 3 {
			t.Errorf("%s declares %d host ports, want 3", name, hostPorts)
		}
	}

	// Pods on one node: the endpoint lists keep them apart by port, and a
	// parameter-server job's by name too (Paddle's PS launcher matches
	// endpoints by POD_IP).
	node := "192.168.7.7"
	ips := map[string]string{}
	for _, n := range podNames("h1", 1, 2, 0) {
		ips[n] = node
	}
	assignIPs(t, ns, ips)
	releaseAll(t, ns, "h1", podNames("h1", 1, 2, 0))
	env, err := resolvedEnv(t, ns, "h1-worker-1")
	if err != nil {
		t.Fatal(err)
	}
	self := env["POD_IP"] + ":" + env["PADDLE_PORT"]
	if !strings.HasPrefix(self, "h1-worker-1.h1:") {
		t.Errorf("h1-worker-1 is %s in the lists, want its name", self)
	}
	// A parameter-server job's lists are in the environment in Host intranet
	// too (Paddle's PS launcher reads them only there) and in Paddle's backup
	// file; both hold this pod at its own port.
	for where, list := range map[string]string{"environment": env["PADDLE_TRAINER_ENDPOINTS"], "backup file": backupEnv(t, ns, "h1")["PADDLE_TRAINER_ENDPOINTS"]} {
		if eps := strings.Split(list, ","); len(eps) != 2 || eps[1] != self || eps[0] == eps[1] {
			t.Errorf("worker endpoints in the %s: %v, self %s", where, eps, self)
		}
	}

	// The ports are the pod's for its lifetime: status and release left them.
	before := pods["h1-worker-1"].Annotations[paddlev1.AnnotationPorts]
	after := waitForPods(t, ns, "h1", podNames("h1", 1, 2, 0)...)["h1-worker-1"].Annotations[paddlev1.AnnotationPorts]
	if before == "" || before != after {
		t.Errorf("ports changed from %q to %q", before, after)
	}
}

func TestReservedNamesFailTheJobBeforeAnyPod(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t)
	job := testutil.MakePaddleJob("bad", ns).Workers(1).Obj()
	job.Spec.Worker.Template.Spec.Containers[0].Name = "wait-for-endpoints"
	createJob(t, job)
	failed := waitForPhase(t, ns, "bad", paddlev1.PaddleJobFailed)
	c := meta.FindStatusCondition(failed.Status.Conditions, paddlev1.JobFailed)
	if c == nil || c.Reason != "InvalidSpec" || !strings.Contains(c.Message, `spec.worker.template.spec.containers[0].name: Invalid value: "wait-for-endpoints": is reserved`) {
		t.Errorf("Failed condition = %+v", c)
	}
	if pods := listPods(t, ns, "bad"); len(pods) != 0 {
		t.Errorf("%d pods were created for an invalid job", len(pods))
	}
}

func TestStatusIsWrittenOnlyWhenItChanges(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t)
	createJob(t, testutil.MakePaddleJob("quiet", ns).Workers(2).Intranet(paddlev1.IntranetService).Obj())
	names := podNames("quiet", 0, 2, 0)
	waitForPods(t, ns, "quiet", names...)
	for i, n := range names {
		setPodStatus(t, ns, n, running(fmt.Sprintf("10.50.0.%d", i+1)))
	}
	waitForPhase(t, ns, "quiet", paddlev1.PaddleJobRunning)
	writesBefore := statusWrites(t)

	// Events on owned pods that change nothing the status shows trigger
	// reconciles, but no write.
	for i := 0; i < 5; i++ {
		for _, n := range names {
			pod := &corev1.Pod{}
			if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: n}, pod); err != nil {
				t.Fatal(err)
			}
			patch := client.MergeFrom(pod.DeepCopy())
			pod.Labels["touch"] = fmt.Sprint(i)
			if err := k8s.Patch(ctx(t), pod, patch); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Then one change the status shows. Reconciles of one job run one at a
	// time and read the latest pods, so once its write is seen every touch
	// above has been reconciled: no sleep, no guess of how long they take.
	setPodStatus(t, ns, names[1], func(w *testutil.PodWrapper) *testutil.PodWrapper { return w.Pending("10.50.0.2") })
	eventually(t, "the worker counted as not ready", func() (bool, error) {
		w := getJob(t, ns, "quiet").Status.Worker
		return w != nil && w.Ready == "1/2", fmt.Errorf("%+v", w)
	})
	// Even a write of an identical status costs a request; the API server counts them.
	if writes := statusWrites(t) - writesBefore; writes != 1 {
		t.Errorf("%d status writes for one status change and %d pod events that change nothing it shows", writes, 5*len(names))
	}
}

// statusWrites is the number of writes to any PaddleJob's status the API
// server has served (testutil.PaddleJobStatusWrites).
func statusWrites(t *testing.T) int {
	t.Helper()
	n, err := testutil.PaddleJobStatusWrites(ctx(t), clientset.RESTClient())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func scale(t *testing.T, ns, name string, workers int32) {
	t.Helper()
	job := getJob(t, ns, name)
	patch := client.MergeFrom(job.DeepCopy())
	job.Spec.Worker.Replicas = workers
	if err := k8s.Patch(ctx(t), job, patch); err != nil {
		t.Fatal(err)
	}
}

// waitForEvent waits for an event about the job with the reason and a note
// containing text.
func waitForEvent(t *testing.T, ns, job, reason, text string) {
	t.Helper()
	eventually(t, fmt.Sprintf("event %s %q on %s", reason, text, job), func() (bool, error) {
		var list eventsv1.EventList
		if err := k8s.List(ctx(t), &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == job && e.Reason == reason && strings.Contains(e.Note, text) {
				return true, nil
			}
			seen = append(seen, e.Reason+": "+e.Note)
		}
		return false, fmt.Errorf("events: %v", seen)
	})
}

// Outside Host intranet every pod has an address of its own, so pods of
// every job get the same ports, as on any cluster: their role's default
// range, nothing recorded in the job; Service-intranet lists, published
// before the pods, name that port.
func TestPodsOffTheHostNetworkShareTheDefaultPorts(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t)
	createJob(t, testutil.MakePaddleJob("a", ns).PS(1).Workers(2).Obj())
	createJob(t, testutil.MakePaddleJob("b", ns).Workers(2).Intranet(paddlev1.IntranetService).Obj())
	pods := waitForPods(t, ns, "a", podNames("a", 1, 2, 0)...)
	for k, v := range waitForPods(t, ns, "b", podNames("b", 0, 2, 0)...) {
		pods[k] = v
	}
	first := ""
	for name, p := range pods {
		if p.Spec.HostNetwork {
			t.Errorf("%s is on the host network", name)
		}
		start, _, _ := strings.Cut(p.Annotations[paddlev1.AnnotationPorts], "-")
		if start != strconv.Itoa(podcontract.DefaultBasePort) {
			t.Errorf("%s holds ports %s; want its role's default range, from %d", name, p.Annotations[paddlev1.AnnotationPorts], podcontract.DefaultBasePort)
		}
		first = start
	}
	for _, job := range []string{"a", "b"} {
		j := &paddlev1.PaddleJob{}
		if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: job}, j); err != nil {
			t.Fatal(err)
		}
		if len(j.Status.HostPorts) > 0 {
			t.Errorf("job %s recorded host ports %v; want none off the host network", job, j.Status.HostPorts)
		}
	}
	env, err := resolvedEnv(t, ns, "b-worker-1")
	if err != nil {
		t.Fatal(err)
	}
	if want := "b-worker-0.b:" + first; !strings.HasPrefix(env["PADDLE_TRAINER_ENDPOINTS"], want+",") {
		t.Errorf("PADDLE_TRAINER_ENDPOINTS=%q, want it to start with %s (worker-0's port)", env["PADDLE_TRAINER_ENDPOINTS"], want)
	}
}

// backupEnv is the backup environment file the job's pods read through
// PADDLE_BACKUP_ENV_PATH, from its endpoints ConfigMap.
func backupEnv(t *testing.T, ns, job string) map[string]string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: job + "-endpoints"}, cm); err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(cm.Data["backup_env.json"]), &env); err != nil {
		t.Fatalf("backup_env.json of %s: %v", job, err)
	}
	return env
}
