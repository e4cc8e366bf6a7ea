package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// fastBackoff keeps restart backoffs, and the wait for failures to settle
// before a restart, short enough for tests.
func fastBackoff(o *operator.Options) {
	o.Controller.RestartBackoff = time.Second
	o.Controller.MaxRestartBackoff = 4 * time.Second
	o.Controller.FailureSettleWindow = time.Second
}

// serviceJob is a job whose pods need no IPs to start (Service intranet),
// so a test drives them straight to Running.
func serviceJob(name, ns string, workers int32) *testutil.JobWrapper {
	return testutil.MakePaddleJob(name, ns).Workers(workers).Intranet(paddlev1.IntranetService)
}

func runPods(t testing.TB, ns string, names ...string) {
	t.Helper()
	for i, n := range names {
		setPodStatus(t, ns, n, running(fmt.Sprintf("10.60.0.%d", i+1)))
	}
}

func podUID(t *testing.T, ns, name string) types.UID {
	t.Helper()
	pod := &corev1.Pod{}
	if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	return pod.UID
}

// waitRecreated waits for a new pod (another UID) under the name.
func waitRecreated(t *testing.T, ns, name string, old types.UID) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	eventually(t, "pod "+name+" to be recreated", func() (bool, error) {
		err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: name}, pod)
		return err == nil && pod.UID != old, err
	})
	return pod
}

func TestExitCodePolicyRecreatesRetryableFailuresOnly(t *testing.T) {
	startOperator(t, fastBackoff)
	ns := newNamespace(t)
	job := serviceJob("ec", ns, 2).Obj()
	job.Spec.Worker.RestartPolicy = paddlev1.RestartPolicyExitCode
	createJob(t, job)
	names := podNames("ec", 0, 2, 0)
	pods := waitForPods(t, ns, "ec", names...)
	runPods(t, ns, names...)
	waitForPhase(t, ns, "ec", paddlev1.PaddleJobRunning)

	// Killed (137: SIGKILL, as when preempted): recreated with its name and ports.
	old := pods["ec-worker-1"]
	setPodStatus(t, ns, "ec-worker-1", failedWith("paddle", 137))
	fresh := waitRecreated(t, ns, "ec-worker-1", old.UID)
	if fresh.Annotations[paddlev1.AnnotationPorts] != old.Annotations[paddlev1.AnnotationPorts] {
		t.Errorf("ports changed from %s to %s", old.Annotations[paddlev1.AnnotationPorts], fresh.Annotations[paddlev1.AnnotationPorts])
	}
	j := getJob(t, ns, "ec")
	if j.Status.RestartCount != 1 || j.Status.IsFinished() {
		t.Errorf("after one recreation: restartCount %d, phase %s", j.Status.RestartCount, j.Status.Phase)
	}
	waitForEvent(t, ns, "ec", "RestartingPod", `pod ec-worker-1: container "paddle" exited with code 137`)

	// An application error (3) is not retryable: the job fails.
	setPodStatus(t, ns, "ec-worker-0", failedWith("paddle", 3))
	failed := waitForPhase(t, ns, "ec", paddlev1.PaddleJobFailed)
	if c := meta.FindStatusCondition(failed.Status.Conditions, paddlev1.JobFailed); c.Reason != "PodFailed" || !strings.Contains(c.Message, "exited with code 3") {
		t.Errorf("Failed condition %+v", c)
	}
}

func TestBackoffLimitCountsRestartsAndRecreations(t *testing.T) {
	startOperator(t, fastBackoff)
	ns := newNamespace(t)
	job := serviceJob("bo", ns, 2).Obj()
	job.Spec.Worker.RestartPolicy = paddlev1.RestartPolicyOnFailure
	job.Spec.BackoffLimit = ptr.To[int32](3)
	createJob(t, job)
	names := podNames("bo", 0, 2, 0)
	pods := waitForPods(t, ns, "bo", names...)
	if pods["bo-worker-0"].Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Fatalf("OnFailure pods restart in place: restartPolicy %q", pods["bo-worker-0"].Spec.RestartPolicy)
	}
	runPods(t, ns, names...)

	// The kubelet restarted worker-0's container twice in place...
	setPodStatus(t, ns, "bo-worker-0", func(w *testutil.PodWrapper) *testutil.PodWrapper {
		w = w.Running("10.60.0.1")
		w.Status.ContainerStatuses[0].RestartCount = 2
		w.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
		return w
	})
	// ...then worker-1's pod failed as a whole (evicted): recreated, the third restart.
	old := podUID(t, ns, "bo-worker-1")
	setPodStatus(t, ns, "bo-worker-1", func(w *testutil.PodWrapper) *testutil.PodWrapper {
		w.Status.Phase, w.Status.Reason, w.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
		return w
	})
	waitRecreated(t, ns, "bo-worker-1", old)
	if j := getJob(t, ns, "bo"); j.Status.IsFinished() {
		t.Fatalf("failed at the limit: %+v", j.Status)
	}
	// One more in-place restart goes past backoffLimit 3.
	setPodStatus(t, ns, "bo-worker-0", func(w *testutil.PodWrapper) *testutil.PodWrapper {
		w.Status.ContainerStatuses[0].RestartCount = 3
		return w
	})
	failed := waitForPhase(t, ns, "bo", paddlev1.PaddleJobFailed)
	c := meta.FindStatusCondition(failed.Status.Conditions, paddlev1.JobFailed)
	if c.Reason != "BackoffLimitExceeded" || !strings.Contains(c.Message, "restarted 4 times, more than backoffLimit 3") {
		t.Errorf("Failed condition %+v", c)
	}
}

func TestRestartBackoffGrowsExponentially(t *testing.T) {
	startOperator(t, fastBackoff)
	ns := newNamespace(t)
	job := serviceJob("ex", ns, 1).Obj()
	job.Spec.Worker.RestartPolicy = paddlev1.RestartPolicyExitCode
	createJob(t, job)
	waitForPods(t, ns, "ex", "ex-worker-0")
	var gaps []time.Duration
	for round := 0; round < 3; round++ {
		runPods(t, ns, "ex-worker-0")
		old := podUID(t, ns, "ex-worker-0")
		failedAt := time.Now()
		setPodStatus(t, ns, "ex-worker-0", failedWith("paddle", 143))
		if round == 0 {
			waitForCondition(t, ns, "ex", paddlev1.JobRunning, metav1.ConditionFalse, "RestartBackoff")
		}
		waitRecreated(t, ns, "ex-worker-0", old)
		gaps = append(gaps, time.Since(failedAt))
	}
	t.Logf("recreation delays: %v", gaps)
	// Lower bounds only, which load cannot break: each gap is measured from
	// before the failure was written, and the operator counts the backoff
	// from when it saw the failure, later.
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if gaps[i] < want {
			t.Errorf("recreation %d after %s, before its %s backoff", i+1, gaps[i], want)
		}
	}
}

// The deadline fires with nothing else happening to the job (the operator
// comes back to the job when it falls), not before it, and stops the
// running pods. How soon after it fires is BenchmarkActiveDeadline's.
func TestActiveDeadlineFiresWithoutAnyOtherEvent(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t)
	failed, _, _ := runPastDeadline(t, ns, "dl", 3)
	c := meta.FindStatusCondition(failed.Status.Conditions, paddlev1.JobFailed)
	if c.Reason != "DeadlineExceeded" {
		t.Errorf("Failed condition %+v", c)
	}
	// The deadline counts from the recorded start; both times have second
	// precision, so this holds exactly.
	if deadline := failed.Status.StartTime.Add(3 * time.Second); c.LastTransitionTime.Time.Before(deadline) {
		t.Errorf("DeadlineExceeded at %s, before the deadline %s", c.LastTransitionTime, deadline)
	}
	waitForPods(t, ns, "dl") // the running pods were stopped
}

// How soon a job whose pods run quietly is seen Failed once its
// activeDeadlineSeconds have passed: after the deadline the operator counts
// (status.startTime, whole seconds, plus the deadline), and after the job's
// creation plus the deadline — negative when the truncated start makes it
// fire early.
//
//	go test ./test/integration -run '^$' -bench ActiveDeadline -benchtime 3x
//
// (part of make bench; results in docs/benchmarks.md).
func BenchmarkActiveDeadline(b *testing.B) {
	startOperator(b)
	var afterRecorded, afterCreation time.Duration
	for i := 0; b.Loop(); i++ {
		ns := newNamespace(b)
		_, recorded, created := runPastDeadline(b, ns, fmt.Sprintf("dl-%d", i), 2)
		afterRecorded += recorded
		afterCreation += created
	}
	b.ReportMetric(afterRecorded.Seconds()/float64(b.N), "s-after-startTime+deadline")
	b.ReportMetric(afterCreation.Seconds()/float64(b.N), "s-after-creation+deadline")
}

// runPastDeadline creates a 2-worker job with activeDeadlineSeconds, runs
// its pods and waits until it fails. It returns the failed job and how long
// after its recorded start plus the deadline, and after its creation plus
// the deadline, the failure was seen.
func runPastDeadline(t testing.TB, ns, name string, seconds int64) (failed *paddlev1.PaddleJob, afterRecorded, afterCreation time.Duration) {
	t.Helper()
	job := serviceJob(name, ns, 2).Obj()
	job.Spec.ActiveDeadlineSeconds = ptr.To(seconds)
	created := time.Now()
	createJob(t, job)
	names := podNames(name, 0, 2, 0)
	waitForPods(t, ns, name, names...)
	runPods(t, ns, names...)
	waitForPhase(t, ns, name, paddlev1.PaddleJobRunning)
	// A tight poll: its interval is part of what the benchmark measures.
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(10 * time.Millisecond) {
		if failed = getJob(t, ns, name); failed.Status.Phase == paddlev1.PaddleJobFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PaddleJob %s not Failed %s after its %ds deadline: phase %s, conditions %+v", name, waitTimeout, seconds, failed.Status.Phase, failed.Status.Conditions)
		}
	}
	seen, limit := time.Now(), time.Duration(seconds)*time.Second
	return failed, seen.Sub(failed.Status.StartTime.Add(limit)), seen.Sub(created.Add(limit))
}

func TestTTLDeletesFinishedJobs(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t)
	job := serviceJob("ttl", ns, 1).Obj()
	job.Spec.TTLSecondsAfterFinished = ptr.To[int32](2)
	createJob(t, job)
	waitForPods(t, ns, "ttl", "ttl-worker-0")
	setPodStatus(t, ns, "ttl-worker-0", succeeded)
	done := waitForPhase(t, ns, "ttl", paddlev1.PaddleJobCompleted)
	eventually(t, "the job to be deleted after its TTL", func() (bool, error) {
		err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: "ttl"}, &paddlev1.PaddleJob{})
		return isNotFound(err), err
	})
	t.Logf("deleted %s after completion", time.Since(done.Status.CompletionTime.Time).Round(100*time.Millisecond))
}

func TestSuspendAndResumeKeepNamesAndPorts(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t)
	createJob(t, testutil.MakePaddleJob("sus", ns).PS(1).Workers(2).Intranet(paddlev1.IntranetHost).Obj())
	names := podNames("sus", 1, 2, 0)
	before := waitForPods(t, ns, "sus", names...)

	setSuspend(t, ns, "sus", true)
	waitForPods(t, ns, "sus")
	suspended := waitForPhase(t, ns, "sus", paddlev1.PaddleJobSuspended)
	if !suspended.Status.IsConditionTrue(paddlev1.JobSuspended) || suspended.Status.StartTime != nil {
		t.Errorf("suspended status %+v", suspended.Status)
	}
	// Another Host job meanwhile must not take the suspended job's ports.
	createJob(t, testutil.MakePaddleJob("other", ns).Workers(2).Intranet(paddlev1.IntranetHost).Obj())
	others := waitForPods(t, ns, "other", podNames("other", 0, 2, 0)...)

	setSuspend(t, ns, "sus", false)
	after := waitForPods(t, ns, "sus", names...)
	for _, n := range names {
		if before[n].Annotations[paddlev1.AnnotationPorts] != after[n].Annotations[paddlev1.AnnotationPorts] {
			t.Errorf("%s: ports %s before suspending, %s after", n, before[n].Annotations[paddlev1.AnnotationPorts], after[n].Annotations[paddlev1.AnnotationPorts])
		}
		for o, p := range others {
			if p.Annotations[paddlev1.AnnotationPorts] == after[n].Annotations[paddlev1.AnnotationPorts] {
				t.Errorf("%s and %s hold the same ports", n, o)
			}
		}
	}
	waitForCondition(t, ns, "sus", paddlev1.JobSuspended, metav1.ConditionFalse, "Resumed")
}

func TestVolcanoPodGroupGatesPodCreation(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t)
	job := testutil.MakePaddleJob("gang", ns).PS(1).Workers(2).Obj()
	job.Spec.SchedulingPolicy = &paddlev1.SchedulingPolicy{Queue: "training", PriorityClass: "high"}
	for _, rs := range []*paddlev1.ReplicaSpec{job.Spec.PS, job.Spec.Worker} {
		rs.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	}
	createJob(t, job)
	waitForCondition(t, ns, "gang", paddlev1.JobPodGroupAdmitted, metav1.ConditionFalse, "WaitingForPodGroup")
	pg := getPodGroup(t, ns, "gang", "scheduling.volcano.sh", "v1beta1")
	spec, _, _ := unstructured.NestedMap(pg.Object, "spec")
	want := map[string]any{"minMember": int64(3), "queue": "training", "priorityClassName": "high", "minResources": map[string]any{"cpu": "3"}}
	if fmt.Sprint(spec) != fmt.Sprint(want) {
		t.Errorf("PodGroup spec %v, want %v", spec, want)
	}
	if ref := metav1.GetControllerOf(pg); ref == nil || ref.Name != "gang" {
		t.Errorf("PodGroup owner %+v", ref)
	}
	// Scaling while the group waits updates its minimum. The reconcile that
	// writes it ran after every earlier event of the job, while the group
	// was not admitted: it created no pod.
	scale(t, ns, "gang", 3)
	eventually(t, "minMember 4", func() (bool, error) {
		n, _, _ := unstructured.NestedInt64(getPodGroup(t, ns, "gang", "scheduling.volcano.sh", "v1beta1").Object, "spec", "minMember")
		return n == 4, fmt.Errorf("minMember %d", n)
	})
	if pods := listPods(t, ns, "gang"); len(pods) != 0 {
		t.Fatalf("%d pods before Volcano admitted the group", len(pods))
	}
	setPodGroupPhase(t, ns, "gang", "Inqueue")
	pods := waitForPods(t, ns, "gang", podNames("gang", 1, 3, 0)...)
	for n, p := range pods {
		if p.Spec.SchedulerName != "volcano" || p.Annotations["scheduling.k8s.io/group-name"] != "gang" {
			t.Errorf("%s: scheduler %q, group %q", n, p.Spec.SchedulerName, p.Annotations["scheduling.k8s.io/group-name"])
		}
	}
	waitForCondition(t, ns, "gang", paddlev1.JobPodGroupAdmitted, metav1.ConditionTrue, "PodGroupAdmitted")

	// Scaling an admitted job updates the group's minimum too.
	scale(t, ns, "gang", 4)
	eventually(t, "minMember 5", func() (bool, error) {
		n, _, _ := unstructured.NestedInt64(getPodGroup(t, ns, "gang", "scheduling.volcano.sh", "v1beta1").Object, "spec", "minMember")
		return n == 5, fmt.Errorf("minMember %d", n)
	})
}

func TestSchedulerPluginsPodGroup(t *testing.T) {
	startOperator(t, func(o *operator.Options) { o.Controller.GangScheduler = "scheduler-plugins" })
	ns := newNamespace(t)
	job := testutil.MakePaddleJob("cos", ns).Workers(2).Obj()
	job.Spec.SchedulingPolicy = &paddlev1.SchedulingPolicy{MinAvailable: ptr.To[int32](2)}
	createJob(t, job)
	// Coscheduling holds pods at its permit stage: they are created at once.
	pods := waitForPods(t, ns, "cos", podNames("cos", 0, 2, 0)...)
	for n, p := range pods {
		if p.Spec.SchedulerName != "scheduler-plugins-scheduler" || p.Labels["scheduling.x-k8s.io/pod-group"] != "cos" {
			t.Errorf("%s: scheduler %q, labels %v", n, p.Spec.SchedulerName, p.Labels)
		}
	}
	pg := getPodGroup(t, ns, "cos", "scheduling.x-k8s.io", "v1alpha1")
	if n, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember"); n != 2 {
		t.Errorf("minMember %d, want 2", n)
	}
}

func TestElasticJobKeepsItsEnvCurrent(t *testing.T) {
	etcdURL := env.ControlPlane.Etcd.URL.String()
	startOperator(t, func(o *operator.Options) { o.Controller.ElasticEtcdEndpoints = []string{etcdURL} })
	ns := newNamespace(t)
	job := serviceJob("el", ns, 2).Obj()
	job.Spec.ElasticPolicy = &paddlev1.ElasticPolicy{MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)}
	createJob(t, job)
	pods := waitForPods(t, ns, "el", podNames("el", 0, 2, 0)...)
	if pods["el-worker-0"].Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("elastic workers restart on failure; got %q", pods["el-worker-0"].Spec.RestartPolicy)
	}
	env, err := resolvedEnv(t, ns, "el-worker-0")
	if err != nil {
		t.Fatal(err)
	}
	server := strings.TrimPrefix(etcdURL, "http://")
	want := map[string]string{
		// Paddle 3's launcher: elastic rendezvous in etcd, between 1 and 4 workers.
		// The job id is unique in the cluster (namespace, name, UID).
		"PADDLE_MASTER": "etcd://" + server, "PADDLE_NNODES": "1:4", "PADDLE_JOB_ID": ns + "_el_" + string(job.UID),
		// The legacy launcher's names.
		"PADDLE_ELASTIC_SERVER": server, "PADDLE_ELASTIC_NP": "1:4", "PADDLE_ELASTIC_JOB_ID": ns + "_el_" + string(job.UID),
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if v, ok := env["PADDLE_TRAINER_ENDPOINTS"]; ok {
		t.Errorf("PADDLE_TRAINER_ENDPOINTS=%q is in an elastic pod's environment: Paddle's launcher would not run elastic", v)
	}
	if v, ok := env["PADDLE_TRAINER_ID"]; ok {
		t.Errorf("PADDLE_TRAINER_ID=%q fixes an elastic worker's rank: Paddle's launcher ranks the live workers itself", v)
	}
	for _, n := range []int32{4, 3} {
		scale(t, ns, "el", n)
		waitForPods(t, ns, "el", podNames("el", 0, int(n), 0)...)
		eventually(t, "the endpoints ConfigMap to list the workers", func() (bool, error) {
			cm := &corev1.ConfigMap{}
			if err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: "el-endpoints"}, cm); err != nil {
				return false, err
			}
			var backup map[string]string
			if err := json.Unmarshal([]byte(cm.Data["backup_env.json"]), &backup); err != nil {
				return false, err
			}
			return cm.Data["PADDLE_TRAINERS_NUM"] == fmt.Sprint(n) && strings.Count(backup["PADDLE_TRAINER_ENDPOINTS"], ",") == int(n)-1, fmt.Errorf("%v", cm.Data)
		})
	}
	// A failed worker is replaced while restarts remain.
	runPods(t, ns, podNames("el", 0, 3, 0)...)
	old := podUID(t, ns, "el-worker-2")
	setPodStatus(t, ns, "el-worker-2", failedWith("paddle", 1))
	waitRecreated(t, ns, "el-worker-2", old)
	if j := getJob(t, ns, "el"); j.Status.IsFinished() {
		t.Errorf("the elastic job failed: %+v", j.Status.Conditions)
	}

	// Scaling outside the bounds is refused by the API server.
	j := getJob(t, ns, "el")
	patch := client.MergeFrom(j.DeepCopy())
	j.Spec.Worker.Replicas = 5
	if err := k8s.Patch(ctx(t), j, patch); err == nil || !strings.Contains(err.Error(), "above spec.elasticPolicy.maxReplicas") {
		t.Errorf("scaling to 5 of at most 4: %v", err)
	}
	for i := 0; i < 3; i++ {
		setPodStatus(t, ns, fmt.Sprintf("el-worker-%d", i), succeeded)
	}
	waitForPhase(t, ns, "el", paddlev1.PaddleJobCompleted)
}

func TestInvalidPolicyCombinationsAreRejected(t *testing.T) {
	ns := newNamespace(t)
	tests := []struct {
		name   string
		mutate func(*paddlev1.PaddleJob)
		want   string
	}{
		{"retryable exit codes without ExitCode", func(j *paddlev1.PaddleJob) { j.Spec.Worker.RetryableExitCodes = []int32{137} }, "retryableExitCodes needs restartPolicy ExitCode"},
		{"an unknown restart policy", func(j *paddlev1.PaddleJob) { j.Spec.Worker.RestartPolicy = "Always" }, `supported values: "Never", "OnFailure", "ExitCode"`},
		{"elastic minimum above maximum", func(j *paddlev1.PaddleJob) {
			j.Spec.ElasticPolicy = &paddlev1.ElasticPolicy{MinReplicas: ptr.To[int32](3), MaxReplicas: ptr.To[int32](2)}
		}, "minReplicas must not exceed elasticPolicy.maxReplicas"},
		{"replicas below the elastic minimum", func(j *paddlev1.PaddleJob) {
			j.Spec.ElasticPolicy = &paddlev1.ElasticPolicy{MinReplicas: ptr.To[int32](3)}
		}, "below spec.elasticPolicy.minReplicas"},
		{"paddle-operator's requests above limits", func(j *paddlev1.PaddleJob) {
			j.Spec.Worker.Requests, j.Spec.Worker.Limits = ptr.To[int32](4), ptr.To[int32](3)
		}, "requests (minimal replicas) must not exceed limits"},
		{"a negative backoff limit", func(j *paddlev1.PaddleJob) { j.Spec.BackoffLimit = ptr.To[int32](-1) }, "spec.backoffLimit"},
		{"a zero deadline", func(j *paddlev1.PaddleJob) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) }, "spec.activeDeadlineSeconds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakePaddleJob("bad", ns).Workers(2).Obj()
			tc.mutate(job)
			err := k8s.Create(ctx(t), job)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want it to say %q", err, tc.want)
			}
		})
	}
}

func setSuspend(t *testing.T, ns, name string, suspend bool) {
	t.Helper()
	job := getJob(t, ns, name)
	patch := client.MergeFrom(job.DeepCopy())
	job.Spec.Suspend = &suspend
	if err := k8s.Patch(ctx(t), job, patch); err != nil {
		t.Fatal(err)
	}
}

func getPodGroup(t *testing.T, ns, name, group, version string) *unstructured.Unstructured {
	t.Helper()
	pg := &unstructured.Unstructured{}
	pg.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: version, Kind: "PodGroup"})
	eventually(t, "PodGroup "+name, func() (bool, error) {
		err := k8s.Get(ctx(t), types.NamespacedName{Namespace: ns, Name: name}, pg)
		return err == nil, err
	})
	return pg
}
