package controller

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// Without the webhook, a running job's spec can change under its pods: the
// missing pod is made only if its spec is the live pods'.
func TestSpecChangeWhileRunningPass(t *testing.T) {
	start := metav1.NewTime(t0.Add(-time.Minute))
	started := func() *paddlev1.PaddleJob {
		return testutil.MakePaddleJob("sc", "ns").UID("sc-uid").Workers(2).
			Status(paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning, StartTime: &start}).Obj()
	}
	// worker-0 lives, made from the started job's spec (recorded or not);
	// worker-1 is missing.
	livePod := func(made *paddlev1.PaddleJob, recorded bool) *corev1.Pod {
		w := testutil.MakePod(made, paddlev1.ReplicaWorker, 0).Running("10.0.0.1")
		if recorded {
			w = w.Annotation(paddlev1.AnnotationSpecHash, specHashes(&made.Defaulted().Spec)[paddlev1.ReplicaWorker])
		}
		return w.Obj()
	}
	tests := []struct {
		name     string
		edit     func(*paddlev1.PaddleJob)
		recorded bool
		want     passWant
		wantMsg  string
	}{
		{name: "an unchanged spec makes the missing pod", edit: func(*paddlev1.PaddleJob) {}, recorded: true,
			want: passWant{created: []string{"sc-worker-1"}, requeue: expectationTimeout}},
		{name: "a scale-up is no spec change", edit: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Replicas = 3 }, recorded: true,
			want: passWant{created: []string{"sc-worker-1", "sc-worker-2"}, requeue: expectationTimeout}},
		{name: "a changed template makes nothing", recorded: true,
			edit: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Template.Spec.Containers[0].Image = "other:v2" },
			want: passWant{phase: paddlev1.PaddleJobPending, conditions: map[string]wantCondition{
				paddlev1.JobCreated: {metav1.ConditionFalse, ReasonSpecChanged}}},
			wantMsg: "spec.worker.template changed while the job's pods run"},
		{name: "a changed intranet makes nothing", recorded: true,
			edit: func(j *paddlev1.PaddleJob) { j.Spec.Intranet = paddlev1.IntranetService },
			want: passWant{phase: paddlev1.PaddleJobPending, conditions: map[string]wantCondition{
				paddlev1.JobCreated: {metav1.ConditionFalse, ReasonSpecChanged}}},
			wantMsg: "spec.intranet changed while the job's pods run"},
		{name: "changed elastic bounds make nothing", recorded: true,
			edit: func(j *paddlev1.PaddleJob) {
				j.Spec.ElasticPolicy = &paddlev1.ElasticPolicy{MaxReplicas: ptr.To[int32](4)}
			},
			want: passWant{phase: paddlev1.PaddleJobPending, conditions: map[string]wantCondition{
				paddlev1.JobCreated: {metav1.ConditionFalse, ReasonSpecChanged}}},
			wantMsg: "spec.elasticPolicy changed while the job's pods run"},
		{name: "pods of an operator that recorded nothing are trusted",
			edit: func(j *paddlev1.PaddleJob) { j.Spec.Worker.Template.Spec.Containers[0].Image = "other:v2" },
			want: passWant{created: []string{"sc-worker-1"}, requeue: expectationTimeout}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			made := started()
			job := made.DeepCopy()
			tc.edit(job)
			f := newFixture(t, Options{}, objects(job, livePod(made, tc.recorded))...)
			got := f.reconcile(t, job)
			tc.want.check(t, got)
			if tc.wantMsg != "" {
				if c := meta.FindStatusCondition(got.job.Status.Conditions, paddlev1.JobCreated); c == nil || !strings.Contains(c.Message, tc.wantMsg) {
					t.Errorf("Created condition %+v does not say %q", c, tc.wantMsg)
				}
			}
			for name, p := range got.pods {
				if name != "sc-worker-0" && p.Annotations[paddlev1.AnnotationSpecHash] != specHashes(&job.Defaulted().Spec)[paddlev1.ReplicaWorker] {
					t.Errorf("%s records %q, not the spec it was made from", name, p.Annotations[paddlev1.AnnotationSpecHash])
				}
			}
		})
	}
}

// Every field of the spec that changes the pods the operator makes is in
// validation.PodFields, the declaration the webhook's immutable fields and
// the spec hash come from; and every field declared there changes them.
// Each field of PaddleJobSpec and ReplicaSpec is changed in turn (a new
// field fails the test until it has a change here) on four jobs: a
// parameter-server job with heter trainers, and elastic jobs bounded by
// elasticPolicy, by worker.requests and limits, and by nothing.
func TestPodFieldsCoverThePods(t *testing.T) {
	for _, name := range jsonNames(reflect.TypeOf(paddlev1.PaddleJobSpec{})) {
		if specChanges[name] == nil {
			t.Errorf("spec.%s: no change of it in this test", name)
		}
	}
	for _, name := range jsonNames(reflect.TypeOf(paddlev1.ReplicaSpec{})) {
		if roleChanges[name] == nil {
			t.Errorf("spec.<role>.%s: no change of it in this test", name)
		}
	}
	jobs := []*paddlev1.PaddleJob{
		testutil.MakePaddleJob("pf", "ns").UID("u").PS(2).Workers(2).Heter(1).Obj(),
		testutil.MakePaddleJob("pf", "ns").UID("u").Workers(2).Elastic(1, 3, "http://etcd:2379").Obj(),
		testutil.MakePaddleJob("pf", "ns").UID("u").Workers(2).Obj(),
		testutil.MakePaddleJob("pf", "ns").UID("u").Workers(2).Obj(),
	}
	jobs[2].Spec.Elastic = ptr.To[int32](1)
	jobs[2].Spec.Worker.Requests, jobs[2].Spec.Worker.Limits = ptr.To[int32](1), ptr.To[int32](3)
	// Unbounded, an elastic job's bounds are its workers (PADDLE_NNODES=n:n).
	jobs[3].Spec.Elastic = ptr.To[int32](1)

	declared := map[string]bool{}
	for _, f := range validation.PodFields {
		declared[f.Path] = true
	}
	shaping := map[string]bool{} // the declared paths some change shaped pods by
	check := func(path, generic string, change func(*paddlev1.PaddleJobSpec)) {
		changesPods := false
		for _, job := range jobs {
			changed := job.DeepCopy()
			change(&changed.Spec)
			changesPods = changesPods || !equality.Semantic.DeepEqual(podsFor(job), podsFor(changed))
		}
		switch {
		case declared[generic] && changesPods:
			shaping[generic] = true
		case declared[path] && changesPods:
			shaping[path] = true
		case changesPods:
			t.Errorf("%s changes the pods but is not in validation.PodFields", path)
		}
	}
	for name, change := range specChanges {
		path := "spec." + name
		if name == "ps" || name == "worker" || name == "heter" {
			path = "spec" // the roles
		}
		check(path, path, change)
	}
	for name, change := range roleChanges {
		for _, rt := range paddlev1.ReplicaTypes {
			check("spec."+string(rt)+"."+name, "spec.<role>."+name, func(s *paddlev1.PaddleJobSpec) {
				if rs := s.Replicas(rt); rs != nil {
					change(rs)
				}
			})
		}
	}
	for path := range declared {
		if !shaping[path] {
			t.Errorf("%s is in validation.PodFields, but no change of it changes the pods", path)
		}
	}
}

// specChanges and roleChanges change each field of a spec and of a role,
// by its JSON name.
var specChanges = map[string]func(*paddlev1.PaddleJobSpec){
	"cleanPodPolicy":   func(s *paddlev1.PaddleJobSpec) { s.CleanPodPolicy = paddlev1.CleanPodPolicyAlways },
	"cleanPolicy":      func(s *paddlev1.PaddleJobSpec) { s.CleanPolicy = paddlev1.CleanPodPolicyAlways },
	"schedulingPolicy": func(s *paddlev1.PaddleJobSpec) { s.SchedulingPolicy = &paddlev1.SchedulingPolicy{Queue: "q"} },
	"intranet":         func(s *paddlev1.PaddleJobSpec) { s.Intranet = paddlev1.IntranetHost },
	"withGloo":         func(s *paddlev1.PaddleJobSpec) { s.WithGloo = ptr.To[int32](1) },
	"elastic":          func(s *paddlev1.PaddleJobSpec) { s.Elastic = ptr.To[int32](2) },
	"elasticPolicy": func(s *paddlev1.PaddleJobSpec) {
		s.ElasticPolicy = &paddlev1.ElasticPolicy{TimeoutSeconds: ptr.To[int32](99)}
	},
	"backoffLimit":            func(s *paddlev1.PaddleJobSpec) { s.BackoffLimit = ptr.To[int32](9) },
	"restartScope":            func(s *paddlev1.PaddleJobSpec) { s.RestartScope = paddlev1.RestartScopeJob },
	"progressDeadlineSeconds": func(s *paddlev1.PaddleJobSpec) { s.ProgressDeadlineSeconds = ptr.To[int64](60) },
	"activeDeadlineSeconds":   func(s *paddlev1.PaddleJobSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](60) },
	"ttlSecondsAfterFinished": func(s *paddlev1.PaddleJobSpec) { s.TTLSecondsAfterFinished = ptr.To[int32](60) },
	"suspend":                 func(s *paddlev1.PaddleJobSpec) { s.Suspend = ptr.To(true) },
	"managedBy":               func(s *paddlev1.PaddleJobSpec) { s.ManagedBy = ptr.To("example.com/other") },
	"ps":                      func(s *paddlev1.PaddleJobSpec) { s.PS, s.Heter = nil, nil },
	"worker":                  func(s *paddlev1.PaddleJobSpec) { s.Worker = s.Worker.DeepCopy() }, // required: it cannot go
	"heter":                   func(s *paddlev1.PaddleJobSpec) { s.Heter = nil },
}
var roleChanges = map[string]func(*paddlev1.ReplicaSpec){
	"replicas":           func(r *paddlev1.ReplicaSpec) { r.Replicas++ },
	"template":           func(r *paddlev1.ReplicaSpec) { r.Template.Labels = map[string]string{"team": "a"} },
	"restartPolicy":      func(r *paddlev1.ReplicaSpec) { r.RestartPolicy = paddlev1.RestartPolicyNever },
	"retryableExitCodes": func(r *paddlev1.ReplicaSpec) { r.RetryableExitCodes = []int32{3} },
	"requests":           func(r *paddlev1.ReplicaSpec) { r.Requests = ptr.To[int32](2) },
	"limits":             func(r *paddlev1.ReplicaSpec) { r.Limits = ptr.To[int32](5) },
}

// podsFor are the first pods of a job's roles as the operator makes them,
// without the spec hash they record (which the declaration itself shapes).
func podsFor(job *paddlev1.PaddleJob) map[paddlev1.ReplicaType]*corev1.Pod {
	opts := DefaultOptions()
	opts.Progress.URL = "http://127.0.0.1:9444"
	pods := FirstPods(job, opts)
	for _, p := range pods {
		delete(p.Annotations, paddlev1.AnnotationSpecHash)
	}
	return pods
}

// jsonNames are the JSON names of a struct's fields.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
