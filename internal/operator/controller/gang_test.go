package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestPodGroup(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").PS(2).Workers(2).Obj()
	for _, rs := range []*paddlev1.ReplicaSpec{job.Spec.PS, job.Spec.Worker} {
		rs.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		}
	}
	job.Spec.SchedulingPolicy = &paddlev1.SchedulingPolicy{Queue: "training", PriorityClass: "high"}
	got := desiredPodGroupSpec(job, GangVolcano)
	want := map[string]any{
		"minMember":         int64(4),
		"minResources":      map[string]any{"cpu": "2", "memory": "4Gi"},
		"queue":             "training",
		"priorityClassName": "high",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Volcano PodGroup spec (-want +got):\n%s", diff)
	}
	job.Spec.SchedulingPolicy.MinAvailable = ptr.To[int32](3)
	job.Spec.SchedulingPolicy.MinResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	got = desiredPodGroupSpec(job, GangSchedulerPlugins)
	want = map[string]any{"minMember": int64(3), "minResources": map[string]any{"cpu": "1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("coscheduling PodGroup spec (-want +got):\n%s", diff)
	}
	pg := newPodGroup(job, GangVolcano)
	if pg.GetAPIVersion() != "scheduling.volcano.sh/v1beta1" || pg.GetName() != "wd" || len(pg.GetOwnerReferences()) != 1 {
		t.Errorf("PodGroup %s %s owners %v", pg.GetAPIVersion(), pg.GetName(), pg.GetOwnerReferences())
	}
}

func TestPodGroupWaiting(t *testing.T) {
	withPhase := func(phase string) *unstructured.Unstructured {
		pg := newPodGroup(testutil.MakePaddleJob("wd", "ns").Workers(2).Obj(), GangVolcano)
		if phase != "" {
			_ = unstructured.SetNestedField(pg.Object, phase, "status", "phase")
		}
		return pg
	}
	for _, tc := range []struct {
		phase, gang string
		admitted    bool
	}{
		{"", GangVolcano, false}, {"Pending", GangVolcano, false}, {"Inqueue", GangVolcano, true},
		{"Running", GangVolcano, true}, {"", GangSchedulerPlugins, true},
	} {
		w := podGroupWaiting(withPhase(tc.phase), tc.gang)
		if (w == "") != tc.admitted {
			t.Errorf("%s phase %q: waiting %q, want admitted %v", tc.gang, tc.phase, w, tc.admitted)
		}
		if w != "" && !strings.Contains(w, "PodGroup wd") {
			t.Errorf("message does not name the PodGroup: %q", w)
		}
	}
}

func TestGangPods(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").Workers(1).Obj()
	job.Spec.SchedulingPolicy = &paddlev1.SchedulingPolicy{}
	opts := DefaultOptions()
	pod := newPod(job, paddlev1.ReplicaWorker, 0, podcontract.PortRange{First: 23000, Count: 3}, podOptionsFor(job, opts))
	if pod.Spec.SchedulerName != "volcano" || pod.Annotations["scheduling.k8s.io/group-name"] != "wd" {
		t.Errorf("Volcano pod: scheduler %q, annotations %v", pod.Spec.SchedulerName, pod.Annotations)
	}
	opts.GangScheduler = GangSchedulerPlugins
	pod = newPod(job, paddlev1.ReplicaWorker, 0, podcontract.PortRange{First: 23000, Count: 3}, podOptionsFor(job, opts))
	if pod.Spec.SchedulerName != DefaultSchedulerPluginsName || pod.Labels["scheduling.x-k8s.io/pod-group"] != "wd" {
		t.Errorf("coscheduling pod: scheduler %q, labels %v", pod.Spec.SchedulerName, pod.Labels)
	}
}

func TestGangPass(t *testing.T) {
	withPolicy := func() *testutil.JobWrapper {
		return testutil.MakePaddleJob("gj", "ns").UID("gj-uid").Workers(2).Intranet(paddlev1.IntranetService).
			SchedulingPolicy(paddlev1.SchedulingPolicy{Queue: "training"})
	}
	// serves makes the cluster serve the PodGroup kinds named (the
	// discovery the reconciler does at start).
	serves := func(kinds map[string]bool) func(*fixture) {
		return func(f *fixture) { f.r.podGroupKinds = kinds }
	}
	// admittedByVolcano is a job whose Volcano PodGroup exists, in phase
	// Inqueue: admitted.
	admittedByVolcano := withPolicy().Obj()
	admittedGroup := newPodGroup(admittedByVolcano, GangVolcano)
	admittedGroup.Object["status"] = map[string]any{"phase": "Inqueue"}
	runPassCases(t, []passCase{
		{
			name:  "Volcano: the PodGroup is created and the pods wait for its admission",
			job:   withPolicy().Obj(),
			setup: serves(map[string]bool{GangVolcano: true}),
			want: passWant{phase: paddlev1.PaddleJobPending,
				conditions: map[string]wantCondition{paddlev1.JobPodGroupAdmitted: {metav1.ConditionFalse, ReasonWaitingForPodGroup}}},
			check: func(t *testing.T, got passResult) {
				pg := podGroupObject(PodGroupGVKs[GangVolcano])
				if err := got.client.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "gj"}, pg); err != nil {
					t.Fatalf("no PodGroup: %v", err)
				}
				if queue, _, _ := unstructured.NestedString(pg.Object, "spec", "queue"); queue != "training" {
					t.Errorf("PodGroup queue %q, want training", queue)
				}
			},
		},
		{
			name:   "Volcano admitted the group: the pods are created in it",
			job:    admittedByVolcano,
			others: []client.Object{admittedGroup},
			setup:  serves(map[string]bool{GangVolcano: true}),
			want:   passWant{created: []string{"gj-worker-0", "gj-worker-1"}, requeue: expectationTimeout},
			check: func(t *testing.T, got passResult) {
				for _, p := range got.pods {
					if p.Spec.SchedulerName != VolcanoSchedulerName || p.Annotations[volcanoGroupAnnotation] != "gj" {
						t.Errorf("pod %s: scheduler %q, group %q; want volcano's, gj", p.Name, p.Spec.SchedulerName, p.Annotations[volcanoGroupAnnotation])
					}
				}
			},
		},
		{
			name:  "the cluster serves no PodGroups: the job waits, saying so",
			job:   withPolicy().Obj(),
			setup: serves(map[string]bool{}),
			want: passWant{phase: paddlev1.PaddleJobPending,
				conditions: map[string]wantCondition{paddlev1.JobPodGroupAdmitted: {metav1.ConditionFalse, ReasonWaitingForPodGroup}}},
		},
		{
			name: "default-scheduler without a gang scheduler: not gang-scheduled (the webhook's rule too)",
			job:  withPolicy().SchedulerName(paddlev1.ReplicaWorker, corev1.DefaultSchedulerName).Obj(),
			opts: Options{GangScheduler: GangNone},
			want: passWant{created: []string{"gj-worker-0", "gj-worker-1"}, requeue: expectationTimeout},
			check: func(t *testing.T, got passResult) {
				for _, p := range got.pods {
					if p.Spec.SchedulerName != corev1.DefaultSchedulerName || p.Annotations[volcanoGroupAnnotation] != "" {
						t.Errorf("pod %s: scheduler %q, group %q; want default-scheduler, none", p.Name, p.Spec.SchedulerName, p.Annotations[volcanoGroupAnnotation])
					}
				}
			},
		},
	})
}
