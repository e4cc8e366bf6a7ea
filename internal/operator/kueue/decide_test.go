package kueue

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueueapi "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// t0 is the fake clock's time when a test starts.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const testQueue = "team-a"

// queuedJob is a PS job of 1 pserver and 2 workers sent to testQueue.
func queuedJob() *testutil.JobWrapper {
	return testutil.MakePaddleJob("wd", "ns").UID("job-uid").PS(1).Workers(2).Queue(testQueue)
}

// wlOf is the Workload the controller creates for pj, with the conditions
// given as "Type" (True) or "Type=-Reason" (False) or "Type=Reason".
func wlOf(pj *paddlev1.PaddleJob, conds ...string) *workload {
	wl := &workload{
		ObjectMeta: metav1.ObjectMeta{Name: workloadName(pj), Namespace: pj.Namespace, Finalizers: []string{kueueResourceInUseFinalizer},
			Labels:          map[string]string{paddlev1.LabelJobName: pj.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pj, paddlev1.GroupVersion.WithKind("PaddleJob"))}},
		Spec: kueueapi.WorkloadSpec{PodSets: job{pj}.PodSets(), QueueName: kueueapi.LocalQueueName(pj.KueueQueueName())},
	}
	for _, c := range conds {
		t, reason, _ := strings.Cut(c, "=")
		status := metav1.ConditionTrue
		if strings.HasPrefix(reason, "-") {
			status, reason = metav1.ConditionFalse, reason[1:]
		}
		if reason == "" {
			reason = t
		}
		wl.Status.Conditions = append(wl.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: t + " " + reason, LastTransitionTime: metav1.NewTime(t0)})
	}
	return wl
}

// admitted is an admission to ClusterQueue cq of every pod set in flavor,
// with the counts given by pod set (the pod set's own when absent).
func admitted(wl *workload, flavor string, counts map[string]int32) *workload {
	wl.Status.Admission = &kueueapi.Admission{ClusterQueue: "cq"}
	for _, ps := range wl.Spec.PodSets {
		count, ok := counts[string(ps.Name)]
		if !ok {
			count = ps.Count
		}
		wl.Status.Admission.PodSetAssignments = append(wl.Status.Admission.PodSetAssignments,
			kueueapi.PodSetAssignment{Name: ps.Name, Flavors: map[corev1.ResourceName]kueueapi.ResourceFlavorReference{corev1.ResourceCPU: kueueapi.ResourceFlavorReference(flavor)}, Count: ptr.To(count)})
	}
	return wl
}

// decideCase is one row of TestDecide: the job, its Workload (owned by
// the job unless owned says otherwise) and its pods, and the step decided.
type decideCase struct {
	name  string
	job   *paddlev1.PaddleJob
	wl    *workload
	owned *bool
	pods  []*corev1.Pod
	want  step
}

// decideFixtures are the jobs, pods and Workload edits the cases use.
type decideFixtures struct {
	suspended, running, completed, elastic, prebuilt, multiKueue, high, highRunning *paddlev1.PaddleJob
	runningPod                                                                      *corev1.Pod
	allReady                                                                        []*corev1.Pod
}

func newDecideFixtures() decideFixtures {
	running := queuedJob().Suspend(false).Obj()
	return decideFixtures{
		suspended:   queuedJob().Suspend(true).Obj(),
		running:     running,
		completed:   queuedJob().Suspend(false).Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobCompleted}).Obj(),
		elastic:     testutil.MakePaddleJob("el", "ns").UID("el-uid").Workers(4).Elastic(2, 4).Queue(testQueue).Suspend(true).Obj(),
		prebuilt:    prebuiltJob(queuedJob().Suspend(true).Obj(), "from-manager"),
		multiKueue:  queuedJob().Suspend(false).ManagedBy(paddlev1.ManagedByMultiKueue).Obj(),
		high:        queuedJob().Suspend(true).Label(paddlev1.KueuePriorityClassLabel, "high").Obj(),
		highRunning: queuedJob().Suspend(false).Label(paddlev1.KueuePriorityClassLabel, "high").Obj(),
		runningPod:  testutil.MakePod(running, paddlev1.ReplicaWorker, 0).Running("10.0.0.1").Obj(),
		allReady: []*corev1.Pod{
			testutil.MakePod(running, paddlev1.ReplicaPS, 0).Running("10.0.0.1").Obj(),
			testutil.MakePod(running, paddlev1.ReplicaWorker, 0).Running("10.0.0.2").Obj(),
			testutil.MakePod(running, paddlev1.ReplicaWorker, 1).Succeeded().Obj(),
		},
	}
}

func deleting(wl *workload) *workload {
	wl.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	return wl
}
func noFinalizer(wl *workload) *workload  { wl.Finalizers = nil; return wl }
func otherQueue(wl *workload) *workload   { wl.Spec.QueueName = "elsewhere"; return wl }
func fewerWorkers(wl *workload) *workload { wl.Spec.PodSets[1].Count = 5; return wl }
func withPriority(wl *workload, kind kueueapi.PriorityClassKind, name string) *workload {
	wl.Spec.PriorityClassRef = &priorityClassRef{Kind: kind, Name: name}
	return wl
}

// prebuiltJob is MultiKueue's copy of a job in a worker cluster: annotated
// with the Workload MultiKueue created for it, as Kueue 0.18 and later do.
func prebuiltJob(pj *paddlev1.PaddleJob, workload string) *paddlev1.PaddleJob {
	pj.Annotations = map[string]string{kueuePrebuiltWorkloadKey: workload}
	return pj
}

// prebuiltWl is the Workload MultiKueue created for job, not adopted yet.
func prebuiltWl(job *paddlev1.PaddleJob, conds ...string) *workload {
	wl := wlOf(job, conds...)
	wl.Name, wl.OwnerReferences, wl.Finalizers = "from-manager", nil, nil
	return wl
}

// decideCasesBeforeAdmission: finished, deleted, missing, prebuilt and
// evicted Workloads.
func decideCasesBeforeAdmission() []decideCase {
	x := newDecideFixtures()
	suspended, running, completed, prebuilt := x.suspended, x.running, x.completed, x.prebuilt
	runningPod := x.runningPod
	return []decideCase{
		// Finished: of the Workload, then of the job.
		{"a finished Workload keeping Kueue's finalizer lets it go", running, wlOf(running, workloadFinished), nil, nil, stepDropFinalizer},
		{"a finished Workload is otherwise left alone, the job too", running, noFinalizer(wlOf(running, workloadFinished)), nil, nil, stepNone},
		{"a finished job finishes its Workload", completed, wlOf(completed, workloadQuotaReserved, workloadAdmitted), nil, nil, stepFinish},
		{"a finished job without a Workload has nothing to do", completed, nil, nil, nil, stepNone},
		// The Workload is being deleted.
		{"a deleted Workload stops the running job", running, deleting(wlOf(running, workloadAdmitted)), nil, nil, stepStop},
		{"a deleted Workload of a stopped job lets it go", suspended, deleting(wlOf(suspended)), nil, nil, stepDropFinalizer},
		{"a deleted Workload without the finalizer is left to go", suspended, noFinalizer(deleting(wlOf(suspended))), nil, nil, stepNone},
		// No Workload.
		{"a suspended job gets its Workload", suspended, nil, nil, nil, stepCreate},
		{"a running job without a Workload queues first", running, nil, nil, nil, stepStop},
		{"a suspended job whose pods are still going waits for them", suspended, nil, nil, []*corev1.Pod{runningPod}, stepNone},
		{"a job on a prebuilt Workload waits for MultiKueue to create it", prebuilt, nil, nil, nil, stepNone},
		// MultiKueue's prebuilt Workload (a worker cluster).
		{"a prebuilt Workload matching the job is adopted", prebuilt, prebuiltWl(prebuilt), ptr.To(false), nil, stepAdopt},
		{"a prebuilt Workload not matching the job is finished out of sync", prebuilt, fewerWorkers(prebuiltWl(prebuilt)), ptr.To(false), nil, stepOutOfSync},
		{"an adopted prebuilt Workload is followed like the job's own", prebuilt, admitted(prebuiltWl(prebuilt, workloadQuotaReserved, workloadAdmitted), "default", nil), nil, nil, stepStart},
		{"an adopted prebuilt Workload that stops matching is finished out of sync", prebuilt, fewerWorkers(prebuiltWl(prebuilt, workloadQuotaReserved+"=-Pending")), nil, nil, stepOutOfSync},
		{"a prebuilt Workload keeps its queue", prebuilt, otherQueue(prebuiltWl(prebuilt)), nil, nil, stepNone},
		// Evicted.
		{"an evicted running job is stopped", running, wlOf(running, workloadQuotaReserved, workloadAdmitted, workloadEvicted+"="+workloadPreempted), nil, []*corev1.Pod{runningPod}, stepStop},
		{"an evicted stopped job keeps the quota while its pods live", suspended, wlOf(suspended, workloadQuotaReserved, workloadEvicted+"="+workloadPreempted), nil, []*corev1.Pod{runningPod}, stepNone},
		{"an evicted stopped job without pods gives the quota back", suspended, wlOf(suspended, workloadQuotaReserved, workloadEvicted+"="+workloadPreempted), nil, nil, stepRelease},
		{"an evicted job whose quota is back waits", suspended, wlOf(suspended, workloadQuotaReserved+"=-Pending", workloadEvicted+"="+workloadPreempted), nil, nil, stepNone},
	}
}

// decideCasesAdmission: waiting for admission, admitted, running.
func decideCasesAdmission() []decideCase {
	x := newDecideFixtures()
	suspended, running, elastic, multiKueue, high, highRunning := x.suspended, x.running, x.elastic, x.multiKueue, x.high, x.highRunning
	runningPod, allReady := x.runningPod, x.allReady
	readyTrue := workloadPodsReady + "=" + workloadStarted
	return []decideCase{
		// Suspended, waiting for admission.
		{"an admitted suspended job starts", suspended, admitted(wlOf(suspended, workloadQuotaReserved, workloadAdmitted), "default", nil), nil, nil, stepStart},
		{"an elastic job admitted with fewer workers, down to its minimum, starts", elastic, admitted(wlOf(elastic, workloadQuotaReserved, workloadAdmitted), "default", map[string]int32{"worker": 2}), nil, nil, stepStart},
		{"an elastic job admitted below its minimum is refused", elastic, admitted(wlOf(elastic, workloadQuotaReserved, workloadAdmitted), "default", map[string]int32{"worker": 1}), nil, nil, stepRefuse},
		{"a PS job admitted with fewer workers is refused", suspended, admitted(wlOf(suspended, workloadQuotaReserved, workloadAdmitted), "default", map[string]int32{"worker": 1}), nil, nil, stepRefuse},
		{"a waiting job whose roles changed gets a new Workload", suspended, fewerWorkers(wlOf(suspended)), nil, nil, stepRecreate},
		{"a job holding quota keeps its Workload whatever changed", suspended, fewerWorkers(wlOf(suspended, workloadQuotaReserved)), nil, nil, stepNone},
		{"a waiting job moved to another queue moves its Workload", suspended, otherQueue(wlOf(suspended)), nil, nil, stepUpdateQueue},
		{"a waiting job given a priority class gives it its Workload", high, wlOf(high), nil, nil, stepUpdatePriority},
		{"a waiting job given another priority class updates its Workload", high, withPriority(wlOf(high), kueueapi.WorkloadPriorityClassKind, "low"), nil, nil, stepUpdatePriority},
		{"a Workload already of the class waits", high, withPriority(wlOf(high), kueueapi.WorkloadPriorityClassKind, "high"), nil, nil, stepNone},
		{"a Workload prioritized by a pod PriorityClass does not follow the label", high, withPriority(wlOf(high), kueueapi.PodPriorityClassKind, "system"), nil, nil, stepNone},
		{"a Workload holding quota without a priority cannot be given one", high, wlOf(high, workloadQuotaReserved), nil, nil, stepNone},
		{"a waiting job waits", suspended, wlOf(suspended, workloadQuotaReserved+"=-Pending"), nil, nil, stepNone},
		// Running.
		{"a running job whose Workload is not admitted is stopped", running, wlOf(running, workloadQuotaReserved), nil, nil, stepStop},
		{"a running job given another priority class updates its Workload", highRunning, withPriority(admitted(wlOf(highRunning, workloadQuotaReserved, workloadAdmitted, readyTrue), "default", nil), kueueapi.WorkloadPriorityClassKind, "low"), nil, allReady, stepUpdatePriority},
		{"a running job with every pod ready sets PodsReady", running, admitted(wlOf(running, workloadQuotaReserved, workloadAdmitted), "default", nil), nil, allReady, stepPodsReady},
		{"a running job starting its pods says it waits for them", running, admitted(wlOf(running, workloadQuotaReserved, workloadAdmitted), "default", nil), nil, []*corev1.Pod{runningPod}, stepPodsReady},
		{"PodsReady as it is: nothing to do", running, admitted(wlOf(running, workloadQuotaReserved, workloadAdmitted, readyTrue), "default", nil), nil, allReady, stepNone},
		{"a job run by MultiKueue elsewhere has no pods here to be ready", multiKueue, admitted(wlOf(multiKueue, workloadQuotaReserved, workloadAdmitted), "default", nil), nil, nil, stepNone},
	}
}

func TestDecide(t *testing.T) {
	tests := append(decideCasesBeforeAdmission(), decideCasesAdmission()...)
	seen := map[step]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := view{job: job{tt.job.DeepCopy()}, wl: tt.wl, pods: tt.pods, owned: tt.wl != nil && ptr.Deref(tt.owned, true)}
			if got := decide(v); got != tt.want {
				t.Errorf("decide = %v, want %v", got, tt.want)
			}
		})
		seen[tt.want] = true
	}
	for s := stepNone; s <= stepPodsReady; s++ {
		if !seen[s] {
			t.Errorf("no case decides %v", s)
		}
	}
}

func TestPodsReadyCondition(t *testing.T) {
	running := queuedJob().Suspend(false).Obj()
	ready := []*corev1.Pod{
		testutil.MakePod(running, paddlev1.ReplicaPS, 0).Running("10.0.0.1").Obj(),
		testutil.MakePod(running, paddlev1.ReplicaWorker, 0).Running("10.0.0.2").Obj(),
		testutil.MakePod(running, paddlev1.ReplicaWorker, 1).Running("10.0.0.3").Obj(),
	}
	oneFailed := append(ready[:2:2], testutil.MakePod(running, paddlev1.ReplicaWorker, 1).Failed("paddle", 1).Obj())
	unready := append(ready[:2:2], testutil.MakePod(running, paddlev1.ReplicaWorker, 1).Running("10.0.0.3").Unready().Obj())
	tests := []struct {
		name       string
		was        []string
		pods       []*corev1.Pod
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"pods starting", nil, ready[:1], metav1.ConditionFalse, workloadWaitForStart},
		{"an unready pod is not ready", nil, unready, metav1.ConditionFalse, workloadWaitForStart},
		{"every pod ready", nil, ready, metav1.ConditionTrue, workloadStarted},
		{"a pod failed after all were ready", []string{workloadPodsReady + "=" + workloadStarted}, oneFailed, metav1.ConditionFalse, workloadWaitForRecovery},
		{"still recovering", []string{workloadPodsReady + "=-" + workloadWaitForRecovery}, oneFailed, metav1.ConditionFalse, workloadWaitForRecovery},
		{"recovered", []string{workloadPodsReady + "=-" + workloadWaitForRecovery}, ready, metav1.ConditionTrue, workloadRecovered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := podsReadyCondition(view{job: job{running}, wl: wlOf(running, tt.was...), pods: tt.pods})
			if c.Status != tt.wantStatus || c.Reason != tt.wantReason {
				t.Errorf("PodsReady = %s/%s, want %s/%s", c.Status, c.Reason, tt.wantStatus, tt.wantReason)
			}
		})
	}
}

// A Workload's stage, read once for the decisions and the messages: a
// finished Workload is finished whatever else holds, an eviction overrides
// the admission it ends.
func TestStageOfAWorkload(t *testing.T) {
	pj := queuedJob().Obj()
	for _, tt := range []struct {
		conds []string
		want  stage
	}{
		{nil, stageQueued},
		{[]string{workloadQuotaReserved}, stageQueued},
		{[]string{workloadQuotaReserved, workloadAdmitted}, stageAdmitted},
		{[]string{workloadQuotaReserved, workloadAdmitted, workloadEvicted}, stageEvicted},
		{[]string{workloadAdmitted, workloadEvicted, workloadFinished}, stageFinished},
	} {
		if got := stageOf(wlOf(pj, tt.conds...)); got != tt.want {
			t.Errorf("conditions %v: stage %d, want %d", tt.conds, got, tt.want)
		}
	}
}
