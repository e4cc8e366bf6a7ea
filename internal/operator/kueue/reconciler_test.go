package kueue

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueueapi "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// The controller's passes on a fake client holding the job, its pods, its
// Workload as Kueue leaves it, and Kueue's flavors and priority classes;
// the clock is a fake one.

type fixture struct {
	r      *Reconciler
	client client.Client
	events *events.FakeRecorder
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := paddlev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []schema.GroupVersionKind{WorkloadGVK, ResourceFlavorGVK, WorkloadPriorityClassGVK} {
		scheme.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		scheme.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &unstructured.UnstructuredList{})
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&paddlev1.PaddleJob{}, newUnstructured(WorkloadGVK)).Build()
	rec := events.NewFakeRecorder(100)
	return &fixture{r: &Reconciler{Client: c, Recorder: rec, Clock: clocktesting.NewFakeClock(t0)}, client: c, events: rec}
}

// pass runs one pass for pj and returns the job after it.
func (f *fixture) pass(t *testing.T, pj *paddlev1.PaddleJob) *paddlev1.PaddleJob {
	t.Helper()
	key := types.NamespacedName{Namespace: pj.Namespace, Name: pj.Name}
	if _, err := f.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatalf("pass: %v", err)
	}
	got := &paddlev1.PaddleJob{}
	if err := f.client.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	return got
}

// workload is the Workload named name after a pass, or nil.
func (f *fixture) workload(t *testing.T, namespace, name string) *workload {
	t.Helper()
	u := newUnstructured(WorkloadGVK)
	if err := f.client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, u); err != nil {
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

func (f *fixture) jobWorkload(t *testing.T, pj *paddlev1.PaddleJob) *workload {
	t.Helper()
	return f.workload(t, pj.Namespace, workloadName(pj))
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

func priorityClassObject(name string, value int64) *unstructured.Unstructured {
	u := newUnstructured(WorkloadPriorityClassGVK)
	u.SetName(name)
	u.Object["value"] = value
	return u
}

// drainEvents is the events recorded so far, one per line.
func (f *fixture) drainEvents() string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

func TestQueuedJobGetsItsWorkload(t *testing.T) {
	pj := queuedJob().Suspend(true).Label(paddlev1.KueuePriorityClassLabel, "high").Obj()
	f := newFixture(t, pj, priorityClassObject("high", 1000))
	f.pass(t, pj)
	wl := f.jobWorkload(t, pj)
	if wl == nil {
		t.Fatal("no Workload created")
	}
	if wl.Spec.QueueName != testQueue || len(wl.Spec.PodSets) != 2 ||
		wl.Spec.PodSets[0].Name != "ps" || wl.Spec.PodSets[0].Count != 1 || wl.Spec.PodSets[1].Name != "worker" || wl.Spec.PodSets[1].Count != 2 {
		t.Errorf("Workload spec = %+v, want queue %s and pod sets ps×1, worker×2", wl.Spec, testQueue)
	}
	if wl.Spec.PodSets[1].MinCount != nil {
		t.Errorf("a PS job's workers may be admitted down to %d: want all or none", *wl.Spec.PodSets[1].MinCount)
	}
	if !equality.Semantic.DeepEqual(wl.Spec.PodSets[1].Template, pj.Spec.Worker.Template) {
		t.Errorf("the worker pod set's template is not the job's")
	}
	if wl.Spec.PriorityClassRef == nil || wl.Spec.PriorityClassRef.Kind != "WorkloadPriorityClass" || wl.Spec.PriorityClassRef.Name != "high" || ptr.Deref(wl.Spec.Priority, 0) != 1000 {
		t.Errorf("priority %v %v, want WorkloadPriorityClass high = 1000", wl.Spec.PriorityClassRef, wl.Spec.Priority)
	}
	if !ownedBy(wl, pj) || !hasFinalizer(wl) {
		t.Errorf("Workload owners %v, finalizers %v: want the job as controller and Kueue's resource-in-use finalizer", wl.OwnerReferences, wl.Finalizers)
	}
}

func TestElasticJobMayBeAdmittedWithFewerWorkers(t *testing.T) {
	pj := testutil.MakePaddleJob("el", "ns").UID("el-uid").Workers(4).Elastic(2, 4).Queue(testQueue).Suspend(true).Obj()
	f := newFixture(t, pj)
	f.pass(t, pj)
	wl := f.jobWorkload(t, pj)
	if wl == nil || ptr.Deref(wl.Spec.PodSets[0].MinCount, 0) != 2 {
		t.Fatalf("Workload %+v: want the worker pod set's minCount at the elastic minimum 2", wl)
	}

	// Kueue admits 3 of the 4 workers: the job runs with 3.
	wl.Status = admitted(wlOf(pj, workloadQuotaReserved, workloadAdmitted), "default", map[string]int32{"worker": 3}).Status
	f = newFixture(t, pj, workloadObject(t, wl), flavorObject("default", nil))
	started := f.pass(t, pj)
	if started.Spec.IsSuspended() || started.Spec.Worker.Replicas != 3 {
		t.Fatalf("suspend=%v workers=%d, want the job resumed with the 3 workers admitted", started.Spec.IsSuspended(), started.Spec.Worker.Replicas)
	}

	// Evicted: stopped with its 4 workers back.
	evicted := f.jobWorkload(t, pj)
	evicted.Status.Conditions = append(evicted.Status.Conditions, metav1.Condition{Type: workloadEvicted, Status: metav1.ConditionTrue, Reason: workloadPreempted, LastTransitionTime: metav1.NewTime(t0)})
	f = newFixture(t, started, workloadObject(t, evicted), flavorObject("default", nil))
	stopped := f.pass(t, started)
	if !stopped.Spec.IsSuspended() || stopped.Spec.Worker.Replicas != 4 {
		t.Errorf("suspend=%v workers=%d, want the job suspended with its 4 workers back", stopped.Spec.IsSuspended(), stopped.Spec.Worker.Replicas)
	}
}

func TestPartialAdmissionOfAPSJobIsRefused(t *testing.T) {
	pj := queuedJob().Suspend(true).Obj()
	wl := admitted(wlOf(pj, workloadQuotaReserved, workloadAdmitted), "default", map[string]int32{"worker": 1})
	f := newFixture(t, pj, workloadObject(t, wl), flavorObject("default", nil))
	got := f.pass(t, pj)
	if !got.Spec.IsSuspended() || got.Spec.Worker.Replicas != 2 {
		t.Errorf("suspend=%v workers=%d: the job ran on a partial admission", got.Spec.IsSuspended(), got.Spec.Worker.Replicas)
	}
	after := f.jobWorkload(t, pj)
	if c := findCondition(after, workloadFinished); c.Status != metav1.ConditionTrue || c.Reason != workloadFailedToStart || !strings.Contains(c.Message, "1 of the 2 worker pods") {
		t.Errorf("Finished = %+v, want True/%s saying 1 of the 2 worker pods", c, workloadFailedToStart)
	}
	if ev := f.drainEvents(); !strings.Contains(ev, "Warning AdmissionRefused") {
		t.Errorf("events %q: want a Warning AdmissionRefused", ev)
	}
	if msg := holdMessage(job{got}, after); !strings.Contains(msg, workloadFailedToStart) {
		t.Errorf("the job's hold %q does not say its Workload finished (%s)", msg, workloadFailedToStart)
	}
}

func TestPriorityFollowsTheLabel(t *testing.T) {
	pj := queuedJob().Suspend(true).Label(paddlev1.KueuePriorityClassLabel, "high").Obj()
	wl := wlOf(pj)
	wl.Spec.PriorityClassRef, wl.Spec.Priority = &priorityClassRef{Group: "kueue.x-k8s.io", Kind: kueueapi.WorkloadPriorityClassKind, Name: "low"}, ptr.To(int32(100))
	f := newFixture(t, pj, workloadObject(t, wl), priorityClassObject("high", 1000), priorityClassObject("low", 100))
	f.pass(t, pj)
	after := f.jobWorkload(t, pj)
	if after.Spec.PriorityClassRef.Name != "high" || ptr.Deref(after.Spec.Priority, 0) != 1000 {
		t.Errorf("priority %+v %v, want WorkloadPriorityClass high = 1000", after.Spec.PriorityClassRef, after.Spec.Priority)
	}
	f.pass(t, pj)
	if ev := f.drainEvents(); strings.Count(ev, "UpdatedWorkload") != 1 {
		t.Errorf("events %q: want one UpdatedWorkload, the second pass having nothing to do", ev)
	}
}

func TestFinishedJobFinishesItsWorkload(t *testing.T) {
	pj := queuedJob().Suspend(false).Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobFailed,
		Conditions: []metav1.Condition{{Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "worker-1 exited 1"}}}).Obj()
	wl := admitted(wlOf(pj, workloadQuotaReserved, workloadAdmitted), "default", nil)
	f := newFixture(t, pj, workloadObject(t, wl))
	f.pass(t, pj)
	after := f.jobWorkload(t, pj)
	if c := findCondition(after, workloadFinished); c.Status != metav1.ConditionTrue || c.Reason != workloadFailed || !strings.Contains(c.Message, "worker-1 exited 1") {
		t.Fatalf("Finished = %+v, want True/Failed with the job's failure", c)
	}
	f.pass(t, pj)
	if after := f.jobWorkload(t, pj); after != nil && hasFinalizer(after) {
		t.Errorf("the finished Workload keeps Kueue's resource-in-use finalizer")
	}
}

func TestRunningJobWithoutAWorkloadQueuesFirst(t *testing.T) {
	pj := queuedJob().Suspend(false).Obj()
	f := newFixture(t, pj)
	got := f.pass(t, pj)
	if !got.Spec.IsSuspended() || f.jobWorkload(t, pj) != nil {
		t.Fatalf("suspend=%v: want the job suspended before its Workload is created", got.Spec.IsSuspended())
	}
	f.pass(t, got)
	if f.jobWorkload(t, pj) == nil {
		t.Errorf("no Workload once the job is suspended")
	}
}

func TestJobWithoutQueueIsNotKueues(t *testing.T) {
	pj := testutil.MakePaddleJob("plain", "ns").UID("plain-uid").Workers(2).Suspend(false).Obj()
	f := newFixture(t, pj)
	got := f.pass(t, pj)
	if got.Spec.IsSuspended() || f.jobWorkload(t, pj) != nil {
		t.Errorf("suspend=%v, Workload %v: the controller acted on a job no queue names", got.Spec.IsSuspended(), f.jobWorkload(t, pj))
	}
}

func TestAdmissionStartsTheJobWithItsAssignment(t *testing.T) {
	pj := queuedJob().Suspend(true).Obj()
	wl := admitted(wlOf(pj, workloadQuotaReserved, workloadAdmitted), "spot", nil)
	wl.Status.AdmissionChecks = []kueueapi.AdmissionCheckState{{Name: "check", PodSetUpdates: []podSetUpdate{{Name: "worker", Annotations: map[string]string{"provisioned": "yes"}}}}}
	spot := corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	f := newFixture(t, pj, workloadObject(t, wl), flavorObject("spot", map[string]string{"pool": "spot"}, spot))

	got := f.pass(t, pj)
	if got.Spec.IsSuspended() {
		t.Fatal("the admitted job is still suspended")
	}
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		tmpl := got.Spec.Replicas(rt).Template
		if tmpl.Spec.NodeSelector["pool"] != "spot" || len(tmpl.Spec.Tolerations) != 1 || tmpl.Labels[kueuePodSetLabel] != string(rt) {
			t.Errorf("%s template: node selector %v, tolerations %v, labels %v; want the flavor's and the pod-set label", rt, tmpl.Spec.NodeSelector, tmpl.Spec.Tolerations, tmpl.Labels)
		}
	}
	if got.Spec.Worker.Template.Annotations["provisioned"] != "yes" || got.Spec.PS.Template.Annotations["provisioned"] != "" {
		t.Errorf("the admission check's update reached %v (worker) and %v (ps), want the worker only",
			got.Spec.Worker.Template.Annotations, got.Spec.PS.Template.Annotations)
	}
	if ev := f.drainEvents(); !strings.Contains(ev, "Started") || !strings.Contains(ev, "ClusterQueue cq") {
		t.Errorf("events %q: want Started naming ClusterQueue cq", ev)
	}
}

func TestEvictionStopsTheJobAndGivesTheQuotaBack(t *testing.T) {
	original := queuedJob().Obj()
	original.Spec.Worker.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	wl := admitted(wlOf(original, workloadQuotaReserved, workloadAdmitted, workloadEvicted+"="+workloadPreempted), "default", nil)
	// Running as admitted: the templates carry what the admission added.
	running := original.DeepCopy()
	running.Spec.Suspend = ptr.To(false)
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		applyPodSetUpdate(&running.Spec.Replicas(rt).Template, podSetUpdate{Labels: map[string]string{kueuePodSetLabel: string(rt)},
			NodeSelector: map[string]string{"pool": "a"}, Tolerations: []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpExists}}})
	}
	ps := testutil.MakePod(running, paddlev1.ReplicaPS, 0).Running("10.0.0.1").Obj()
	f := newFixture(t, running, ps, workloadObject(t, wl))

	// Pass 1 suspends the job and restores its templates exactly.
	got := f.pass(t, running)
	if !got.Spec.IsSuspended() {
		t.Fatal("the evicted job was not suspended")
	}
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		if !equality.Semantic.DeepEqual(got.Spec.Replicas(rt).Template, original.Spec.Replicas(rt).Template) {
			t.Errorf("%s template not restored:\n got %+v\nwant %+v", rt, got.Spec.Replicas(rt).Template, original.Spec.Replicas(rt).Template)
		}
	}
	// Pass 2: the quota stays reserved while a pod lives (the PaddleJob
	// controller deletes it).
	f.pass(t, got)
	if !isTrue(f.jobWorkload(t, running), workloadQuotaReserved) {
		t.Fatal("the quota was released while a pod still ran")
	}
	// Pass 3, the pods gone: the admission is cleared and the Workload requeued.
	if err := f.client.Delete(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	f.pass(t, got)
	after := f.jobWorkload(t, running)
	if after.Status.Admission != nil || isTrue(after, workloadQuotaReserved) || isTrue(after, workloadAdmitted) || !isTrue(after, workloadRequeued) {
		t.Errorf("after the pods left: admission %v, conditions %+v; want no admission, QuotaReserved and Admitted False, Requeued True", after.Status.Admission, after.Status.Conditions)
	}
}

// In a MultiKueue worker cluster the job is MultiKueue's copy of the
// manager's, labelled with the Workload MultiKueue created here first: the
// job adopts it instead of creating its own, and runs once it is admitted.
func TestWorkerCopyRunsOnThePrebuiltWorkload(t *testing.T) {
	manager := queuedJob().UID("manager-uid").Suspend(true).Obj()
	remote := prebuiltJob(queuedJob().UID("worker-uid").Suspend(true).Label(paddlev1.KueuePriorityClassLabel, "high").Obj(), workloadName(manager))
	wl := admitted(wlOf(manager, workloadQuotaReserved, workloadAdmitted), "default", nil)
	wl.OwnerReferences, wl.Finalizers = nil, nil // as MultiKueue creates it
	f := newFixture(t, remote, workloadObject(t, wl), flavorObject("default", nil))

	f.pass(t, remote)
	adopted := f.workload(t, remote.Namespace, workloadName(manager))
	if !ownedBy(adopted, remote) || adopted.Labels[kueueJobUIDLabel] != "worker-uid" {
		t.Fatalf("Workload owners %v, labels %v: want the worker's job as its controller", adopted.OwnerReferences, adopted.Labels)
	}
	if f.jobWorkload(t, remote) != nil {
		t.Fatal("the worker's job created a Workload of its own")
	}
	got := f.pass(t, remote)
	if got.Spec.IsSuspended() {
		t.Error("the job on its admitted prebuilt Workload did not start")
	}
	if adopted := f.workload(t, remote.Namespace, workloadName(manager)); adopted.Spec.PriorityClassRef != nil {
		t.Errorf("the prebuilt Workload's priority %v changed: it is the manager's", adopted.Spec.PriorityClassRef)
	}
}

// In a manager cluster a job MultiKueue manages gets its Workload as any
// other queued job; admitted, it is resumed (MultiKueue runs its copy in a
// worker cluster, and no pods here are waited for).
func TestManagerJobOfMultiKueueIsQueued(t *testing.T) {
	pj := queuedJob().Suspend(true).ManagedBy(paddlev1.ManagedByMultiKueue).Obj()
	f := newFixture(t, pj, flavorObject("default", nil))
	f.pass(t, pj)
	wl := f.jobWorkload(t, pj)
	if wl == nil {
		t.Fatal("no Workload for the job MultiKueue manages: it would never be dispatched")
	}
	wl.Status = admitted(wlOf(pj, workloadQuotaReserved, workloadAdmitted), "default", nil).Status
	f = newFixture(t, pj, workloadObject(t, wl), flavorObject("default", nil))
	got := f.pass(t, pj)
	if got.Spec.IsSuspended() {
		t.Fatal("the admitted job was not resumed")
	}
	f.pass(t, got)
	if c := findCondition(f.jobWorkload(t, pj), workloadPodsReady); c.Type != "" {
		t.Errorf("PodsReady %+v set for a job whose pods run in another cluster", c)
	}
}
