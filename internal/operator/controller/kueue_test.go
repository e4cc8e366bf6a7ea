package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// The Workload protocol, pass by pass, on a fake client holding the job,
// its pods, its Workload as Kueue leaves it, and Kueue's flavors and
// priority classes.

const testQueue = "team-a"

// queuedJob is a PS job of 1 pserver and 2 workers sent to testQueue.
func queuedJob() *testutil.JobWrapper {
	return testutil.MakePaddleJob("wd", "ns").UID("job-uid").PS(1).Workers(2).Queue(testQueue)
}

// wlOf is the Workload the operator creates for job, with the conditions
// given (type → reason; a reason starting with "-" means status False).
func wlOf(job *paddlev1.PaddleJob, conds map[string]string) *workload {
	wl := &workload{
		Metadata: metav1.ObjectMeta{Name: workloadName(job), Namespace: job.Namespace, Finalizers: []string{kueueResourceInUseFinalizer},
			Labels:          map[string]string{paddlev1.LabelJobName: job.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, paddlev1.GroupVersion.WithKind("PaddleJob"))}},
		Spec: workloadSpec{PodSets: jobPodSets(job), QueueName: job.KueueQueueName()},
	}
	for t, reason := range conds {
		status := metav1.ConditionTrue
		if strings.HasPrefix(reason, "-") {
			status, reason = metav1.ConditionFalse, reason[1:]
		}
		wl.Status.Conditions = append(wl.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: t + " " + reason, LastTransitionTime: metav1.NewTime(t0)})
	}
	return wl
}

// admitted is an admission to ClusterQueue cq of every pod set in flavor.
func admitted(wl *workload, flavor string) *workload {
	wl.Status.Admission = &admission{ClusterQueue: "cq"}
	for _, ps := range wl.Spec.PodSets {
		wl.Status.Admission.PodSetAssignments = append(wl.Status.Admission.PodSetAssignments,
			podSetAssignment{Name: ps.Name, Flavors: map[corev1.ResourceName]string{corev1.ResourceCPU: flavor}, Count: ptr.To(ps.Count)})
	}
	return wl
}

func workloadObject(t *testing.T, wl *workload) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(wl)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(WorkloadGVK)
	return u
}

func flavorObject(name string, nodeLabels map[string]string, tolerations ...corev1.Toleration) *unstructured.Unstructured {
	u := newUnstructured(ResourceFlavorGVK)
	u.SetName(name)
	spec := map[string]any{}
	if len(nodeLabels) > 0 {
		labels := map[string]any{}
		for k, v := range nodeLabels {
			labels[k] = v
		}
		spec["nodeLabels"] = labels
	}
	var tols []any
	for _, tol := range tolerations {
		m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&tol)
		tols = append(tols, m)
	}
	if tols != nil {
		spec["tolerations"] = tols
	}
	u.Object["spec"] = spec
	return u
}

// readWorkload is the job's Workload after a pass, or nil.
func readWorkload(t *testing.T, c client.Client, job *paddlev1.PaddleJob) *workload {
	t.Helper()
	u := newUnstructured(WorkloadGVK)
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: job.Namespace, Name: workloadName(job)}, u); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		t.Fatal(err)
	}
	wl := &workload{}
	if err := fromUnstructured(u, wl); err != nil {
		t.Fatal(err)
	}
	return wl
}

func kueueFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	f := newFixture(t, Options{}, objs...)
	f.r.kueueServed = true
	return f
}

func TestKueueQueuesASuspendedJob(t *testing.T) {
	job := queuedJob().Suspend(true).Label(paddlev1.KueuePriorityClassLabel, "high").Obj()
	wpc := newUnstructured(WorkloadPriorityClassGVK)
	wpc.SetName("high")
	wpc.Object["value"] = int64(1000)
	f := kueueFixture(t, job, wpc)

	got := f.reconcile(t, job)
	passWant{}.check(t, got)
	wl := readWorkload(t, got.client, job)
	if wl == nil {
		t.Fatal("no Workload created")
	}
	if wl.Spec.QueueName != testQueue || len(wl.Spec.PodSets) != 2 ||
		wl.Spec.PodSets[0].Name != "ps" || wl.Spec.PodSets[0].Count != 1 || wl.Spec.PodSets[1].Name != "worker" || wl.Spec.PodSets[1].Count != 2 {
		t.Errorf("Workload spec = %+v, want queue %s and pod sets ps×1, worker×2", wl.Spec, testQueue)
	}
	if !equality.Semantic.DeepEqual(wl.Spec.PodSets[1].Template, job.Spec.Worker.Template) {
		t.Errorf("the worker pod set's template is not the job's")
	}
	if wl.Spec.PriorityClassRef == nil || wl.Spec.PriorityClassRef.Kind != "WorkloadPriorityClass" || wl.Spec.PriorityClassRef.Name != "high" || ptr.Deref(wl.Spec.Priority, 0) != 1000 {
		t.Errorf("priority %v %v, want WorkloadPriorityClass high = 1000", wl.Spec.PriorityClassRef, wl.Spec.Priority)
	}
	if ref := metav1.GetControllerOf(&wl.Metadata); ref == nil || ref.UID != job.UID || !hasFinalizer(wl) {
		t.Errorf("Workload owner %v, finalizers %v: want the job as controller and Kueue's resource-in-use finalizer", ref, wl.Metadata.Finalizers)
	}

	// The next pass finds it waiting: the job is Queued and says where.
	wl.Status.Conditions = []metav1.Condition{{Type: workloadQuotaReserved, Status: metav1.ConditionFalse, Reason: "Pending",
		Message: "couldn't assign flavors to pod set worker: insufficient quota for cpu", LastTransitionTime: metav1.NewTime(t0)}}
	if err := got.client.Status().Update(context.Background(), workloadObject(t, wl)); err != nil {
		t.Fatal(err)
	}
	got = f.reconcile(t, job)
	passWant{phase: paddlev1.PaddleJobQueued, conditions: map[string]wantCondition{paddlev1.JobSuspended: {metav1.ConditionTrue, ReasonQueued}}}.check(t, got)
	msg := meta.FindStatusCondition(got.job.Status.Conditions, paddlev1.JobSuspended).Message
	for _, want := range []string{"LocalQueue " + testQueue, "insufficient quota for cpu"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Suspended condition %q does not say %q", msg, want)
		}
	}
}

func TestKueueAdmissionStartsTheJobWithItsAssignment(t *testing.T) {
	job := queuedJob().Suspend(true).Obj()
	wl := admitted(wlOf(job, map[string]string{workloadQuotaReserved: "QuotaReserved", workloadAdmitted: "Admitted"}), "spot")
	wl.Status.AdmissionChecks = []admissionCheckState{{Name: "check", PodSetUpdates: []podSetUpdate{{Name: "worker", Annotations: map[string]string{"provisioned": "yes"}}}}}
	spot := corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	f := kueueFixture(t, job, workloadObject(t, wl), flavorObject("spot", map[string]string{"pool": "spot"}, spot))

	got := f.reconcile(t, job)
	passWant{}.check(t, got)
	if got.job.Spec.IsSuspended() {
		t.Fatal("the admitted job is still suspended")
	}
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		tmpl := got.job.Spec.Replicas(rt).Template
		if tmpl.Spec.NodeSelector["pool"] != "spot" || len(tmpl.Spec.Tolerations) != 1 || tmpl.Labels[kueuePodSetLabel] != string(rt) {
			t.Errorf("%s template: nodeSelector %v, tolerations %v, labels %v; want the flavor's node label and toleration and the pod-set label",
				rt, tmpl.Spec.NodeSelector, tmpl.Spec.Tolerations, tmpl.Labels)
		}
	}
	if got.job.Spec.Worker.Template.Annotations["provisioned"] != "yes" || got.job.Spec.PS.Template.Annotations["provisioned"] != "" {
		t.Errorf("the admission check's update reached %v (worker) and %v (ps), want the worker only",
			got.job.Spec.Worker.Template.Annotations, got.job.Spec.PS.Template.Annotations)
	}

	// Running, every pod ready: the Workload's PodsReady follows.
	pods := []client.Object{got.job}
	for _, p := range []*corev1.Pod{
		testutil.MakePod(got.job, paddlev1.ReplicaPS, 0).Running("10.0.0.1").Obj(),
		testutil.MakePod(got.job, paddlev1.ReplicaWorker, 0).Running("10.0.0.2").Obj(),
		testutil.MakePod(got.job, paddlev1.ReplicaWorker, 1).Running("10.0.0.3").Obj(),
	} {
		pods = append(pods, p)
	}
	f = kueueFixture(t, append(pods, workloadObject(t, wl), flavorObject("spot", nil))...)
	f.reconcile(t, got.job)
	if c := findWorkloadCondition(readWorkload(t, f.client, job), workloadPodsReady); c.Status != metav1.ConditionTrue || c.Reason != workloadStarted {
		t.Errorf("PodsReady = %+v, want True/Started", c)
	}
}

func TestKueueEvictionStopsTheJobAndGivesTheQuotaBack(t *testing.T) {
	original := queuedJob().Obj()
	original.Spec.Worker.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	wl := wlOf(original, map[string]string{workloadQuotaReserved: "QuotaReserved", workloadAdmitted: "Admitted", workloadEvicted: workloadPreempted})
	admitted(wl, "default")
	// Running as admitted: the templates carry what the admission added.
	running := original.DeepCopy()
	running.Spec.Suspend = ptr.To(false)
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		applyPodSetUpdate(&running.Spec.Replicas(rt).Template, podSetUpdate{Labels: map[string]string{kueuePodSetLabel: string(rt)},
			NodeSelector: map[string]string{"pool": "a"}, Tolerations: []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpExists}}})
	}
	ps := testutil.MakePod(running, paddlev1.ReplicaPS, 0).Running("10.0.0.1").Obj()
	f := kueueFixture(t, running, ps, workloadObject(t, wl))

	// Pass 1 suspends the job and restores its templates exactly.
	got := f.reconcile(t, running)
	passWant{}.check(t, got)
	if !got.job.Spec.IsSuspended() {
		t.Fatal("the evicted job was not suspended")
	}
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		if !equality.Semantic.DeepEqual(got.job.Spec.Replicas(rt).Template, original.Spec.Replicas(rt).Template) {
			t.Errorf("%s template not restored:\n got %+v\nwant %+v", rt, got.job.Spec.Replicas(rt).Template, original.Spec.Replicas(rt).Template)
		}
	}
	// Pass 2 deletes its pods; the quota stays reserved while they live.
	got = f.reconcile(t, got.job)
	passWant{deleted: []string{ps.Name}, phase: paddlev1.PaddleJobQueued}.check(t, got)
	if !workloadCondition(readWorkload(t, f.client, running), workloadQuotaReserved) {
		t.Fatal("the quota was released while a pod still ran")
	}
	// Pass 3, the pods gone: the admission is cleared and the Workload requeued.
	if err := f.client.Delete(context.Background(), ps); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	f.reconcile(t, got.job)
	after := readWorkload(t, f.client, running)
	if after.Status.Admission != nil || workloadCondition(after, workloadQuotaReserved) || workloadCondition(after, workloadAdmitted) || !workloadCondition(after, workloadRequeued) {
		t.Errorf("after the pods left: admission %v, conditions %+v; want no admission, QuotaReserved and Admitted False, Requeued True", after.Status.Admission, after.Status.Conditions)
	}
}

func TestKueueFinishedJobFinishesItsWorkload(t *testing.T) {
	job := queuedJob().Suspend(false).Status(finishedStatus(paddlev1.PaddleJobCompleted, 0)).Obj()
	wl := admitted(wlOf(job, map[string]string{workloadQuotaReserved: "QuotaReserved", workloadAdmitted: "Admitted"}), "default")
	f := kueueFixture(t, job, workloadObject(t, wl))
	f.reconcile(t, job)
	after := readWorkload(t, f.client, job)
	if c := findWorkloadCondition(after, workloadFinished); c.Status != metav1.ConditionTrue || c.Reason != workloadSucceeded {
		t.Fatalf("Finished = %+v, want True/Succeeded", c)
	}
	f.reconcile(t, job)
	if after := readWorkload(t, f.client, job); after != nil && hasFinalizer(after) {
		t.Errorf("the finished Workload keeps Kueue's resource-in-use finalizer")
	}
}

func TestKueueRunningJobWithoutAWorkloadQueuesFirst(t *testing.T) {
	job := queuedJob().Suspend(false).Obj()
	f := kueueFixture(t, job)
	got := f.reconcile(t, job)
	passWant{}.check(t, got)
	if !got.job.Spec.IsSuspended() || readWorkload(t, f.client, job) != nil {
		t.Errorf("suspend=%v, Workload %v: want the job suspended before its Workload is created", got.job.Spec.IsSuspended(), readWorkload(t, f.client, job))
	}
	got = f.reconcile(t, got.job)
	if readWorkload(t, f.client, job) == nil {
		t.Errorf("no Workload once the job is suspended")
	}
}

func TestKueueNotInstalledSaysSo(t *testing.T) {
	job := queuedJob().Suspend(true).Obj()
	f := newFixture(t, Options{}, job)
	got := f.reconcile(t, job)
	passWant{phase: paddlev1.PaddleJobQueued}.check(t, got)
	if msg := findCondition(got.job, paddlev1.JobSuspended).Message; !strings.Contains(msg, paddlev1.KueueFrameworkName) {
		t.Errorf("Suspended condition %q does not say how to install Kueue for PaddleJobs", msg)
	}
}

func TestJobManagedByMultiKueueIsLeftAlone(t *testing.T) {
	job := queuedJob().Suspend(false).ManagedBy(paddlev1.ManagedByMultiKueue).Obj()
	f := kueueFixture(t, job)
	got := f.reconcile(t, job)
	passWant{}.check(t, got)
	if got.job.Spec.IsSuspended() || got.job.Status.Phase != "" || readWorkload(t, f.client, job) != nil {
		t.Errorf("the operator touched a job MultiKueue manages: suspend=%v phase=%q", got.job.Spec.IsSuspended(), got.job.Status.Phase)
	}
}

// With the integration off (--kueue=off) the queue label means nothing: the
// job runs as any other and no Workload is made.
func TestKueueOffIgnoresTheLabel(t *testing.T) {
	job := queuedJob().Suspend(false).Obj()
	f := newFixture(t, Options{IgnoreKueue: true}, job)
	f.r.kueueServed = true
	got := f.reconcile(t, job)
	passWant{created: []string{"wd-ps-0", "wd-worker-0", "wd-worker-1"}, requeue: expectationTimeout}.check(t, got)
	if got.job.Spec.IsSuspended() || readWorkload(t, f.client, job) != nil {
		t.Errorf("suspend=%v, Workload %v: want the job run without Kueue", got.job.Spec.IsSuspended(), readWorkload(t, f.client, job))
	}
}
