package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// The real gang schedulers and Kueue, each built from its Go module and run
// by a local cluster of its own started with --with, as a user starts one.

var (
	volcanoPodGroups      = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
	coschedulingPodGroups = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	kueueWorkloads        = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
)

// withAddons starts a local cluster running the add-ons (withCluster).
func withAddons(t testing.TB, addons ...string) (*localcluster.State, *client.Client) {
	t.Helper()
	home, err := os.MkdirTemp("", "paddlejob-e2e-addons-")
	if err != nil {
		t.Fatal(err)
	}
	o := opts
	o.Home = home
	o.With = addons
	return withCluster(t, o)
}

// withCluster starts a local cluster of options o, stopped when the test
// ends, and returns it with a client of it.
func withCluster(t testing.TB, o localcluster.Options) (*localcluster.State, *client.Client) {
	t.Helper()
	home, addons := o.Home, o.With
	o.Out = testWriter{t, new([]byte)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	start := time.Now()
	st, err := upCluster(ctx, o)
	if err != nil {
		t.Fatalf("starting a local cluster with %v: %v", addons, err)
	}
	t.Logf("local cluster with %v up in %s", addons, time.Since(start).Round(100*time.Millisecond))
	c, err := client.NewFromKubeconfig(st.Kubeconfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		o.Out = os.Stderr
		if err := downCluster(o); err != nil {
			t.Errorf("stopping the cluster with %v: %v", addons, err)
		}
		if left := processesMentioning(home); len(left) > 0 {
			t.Errorf("processes left after down:\n%s", strings.Join(left, "\n"))
		}
	})
	return st, c
}

// testWriter logs whole lines to the test's log.
type testWriter struct {
	t    testing.TB
	line *[]byte
}

func (w testWriter) Write(p []byte) (int, error) {
	*w.line = append(*w.line, p...)
	for {
		i := slices.Index(*w.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.t.Log(string((*w.line)[:i]))
		*w.line = (*w.line)[i+1:]
	}
}

func dynamicClient(t testing.TB, st *localcluster.State) *dynamic.DynamicClient {
	t.Helper()
	cfg, err := kube.LoadConfig(st.Kubeconfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// paddle-operator's example 4 (seed 004) as written — its PaddleJob, whose workers name
// Volcano, and its PodGroup of minMember 4 — completes with real Paddle,
// every pod placed by the real Volcano scheduler.
func TestVolcanoWideAndDeepExample(t *testing.T) {
	t.Parallel()
	st, pj := withAddons(t, localcluster.AddonVolcano)
	runVolcanoWideAndDeepExample(t, st, pj)
}

// runVolcanoWideAndDeepExample runs example 4 on a cluster started with
// Volcano.
func runVolcanoWideAndDeepExample(t *testing.T, st *localcluster.State, pj *client.Client) {
	const path = "config/samples/seed004/example-4-wide-and-deep-volcano.yaml"
	// The file's two documents, the PaddleJob then its PodGroup, sent in
	// that order as kubectl apply -f sends them.
	job, pg := &paddlev1.PaddleJob{}, &unstructured.Unstructured{}
	var docs []string
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(mustRead(t, path), -1) {
		if strings.Contains(d, "kind:") {
			docs = append(docs, d)
		}
	}
	if len(docs) != 2 {
		t.Fatalf("%s holds %d objects, want a PaddleJob and a PodGroup", path, len(docs))
	}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), job); err != nil || job.Kind != "PaddleJob" {
		t.Fatalf("the first object of %s is no PaddleJob (%v)", path, err)
	}
	if err := yaml.Unmarshal([]byte(docs[1]), &pg.Object); err != nil || pg.GetKind() != "PodGroup" {
		t.Fatalf("the second object of %s is no PodGroup (%v)", path, err)
	}
	job.Namespace = newNamespace(t, pj)
	pg.SetNamespace(job.Namespace)
	dyn := dynamicClient(t, st)
	start := time.Now()
	createJob(t, pj, job)
	if _, err := dyn.Resource(volcanoPodGroups).Namespace(job.Namespace).Apply(context.Background(), pg.GetName(), pg,
		metav1.ApplyOptions{FieldManager: "e2e", Force: true}); err != nil {
		t.Fatal(err)
	}
	done, logs := awaitCompletion(t, pj, job, start)
	checkPSJob(t, done, logs)
	// The workers stay (cleanPodPolicy Never): Volcano placed them.
	for _, pod := range []string{"wide-ande-deep-worker-0", "wide-ande-deep-worker-1"} {
		if by := scheduledBy(t, pj, job.Namespace, pod); by != localcluster.VolcanoSchedulerName {
			t.Errorf("%s was scheduled by %q, want %q", pod, by, localcluster.VolcanoSchedulerName)
		}
	}
	got, err := dyn.Resource(volcanoPodGroups).Namespace(job.Namespace).Get(context.Background(), pg.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mm, _, _ := unstructured.NestedInt64(got.Object, "spec", "minMember"); mm != 4 {
		t.Errorf("PodGroup minMember %d, want the example's 4", mm)
	}
}

// A Volcano gang that cannot fit while a blocker holds the node starts no
// pod at all; once the blocker goes, the gang scheduler places every pod
// and the job completes.
func TestVolcanoGangWaitsForRoom(t *testing.T) {
	t.Parallel()
	st, pj := withAddons(t, localcluster.AddonVolcano)
	spread, _ := gangWaitsForRoom(t, pj, st, localcluster.VolcanoSchedulerName, volcanoPodGroups)
	t.Logf("the gang's %d pods were bound within %s of each other", gangPods, spread)
}

// The same with scheduler-plugins' Coscheduling.
func TestCoschedulingGangWaitsForRoom(t *testing.T) {
	t.Parallel()
	st, pj := withAddons(t, localcluster.AddonCoscheduling)
	spread, _ := gangWaitsForRoom(t, pj, st, localcluster.CoschedulingSchedulerName, coschedulingPodGroups)
	t.Logf("the gang's %d pods were bound within %s of each other", gangPods, spread)
}

// How close together each gang scheduler binds a gang's pods once there is
// room (the spread of their Scheduled events), and how long after the room
// is made the job completes, each on a local cluster of its own:
//
//	go test ./test/e2e -run '^$' -bench GangBinding -benchtime 1x
//
// (part of make bench; results in docs/benchmarks.md).
func BenchmarkGangBinding(b *testing.B) {
	for _, gang := range []struct {
		addon, scheduler string
		podGroups        schema.GroupVersionResource
	}{
		{localcluster.AddonVolcano, localcluster.VolcanoSchedulerName, volcanoPodGroups},
		{localcluster.AddonCoscheduling, localcluster.CoschedulingSchedulerName, coschedulingPodGroups},
	} {
		b.Run(gang.addon, func(b *testing.B) {
			st, pj := withAddons(b, gang.addon)
			var spread, completed time.Duration
			for b.Loop() {
				s, c := gangWaitsForRoom(b, pj, st, gang.scheduler, gang.podGroups)
				spread, completed = spread+s, completed+c
			}
			b.ReportMetric(spread.Seconds()/float64(b.N), "s-binding-spread")
			b.ReportMetric(completed.Seconds()/float64(b.N), "s-room-to-completed")
		})
	}
}

// Sizes of the gang test on the node's 256 CPUs: the blocker leaves 36,
// room for one of the gang's three pods of 30 and not for the group. (Volcano's
// overcommit plugin admits a group when its 90 fit in 1.2 times the node
// less what is in use: 307 - 220 = 87 does not.)
const (
	blockerCPU = "220"
	gangPods   = 3
	gangPodCPU = "30"
)

// gangWaitsForRoom runs a gang that cannot fit while a blocker pod holds
// the node, checks that the scheduler binds none of it, deletes the blocker
// and waits until the job completes, every pod placed by the gang
// scheduler. It returns the spread of the pods' Scheduled events and the
// time from the blocker's deletion to the completion.
func gangWaitsForRoom(t testing.TB, pj *client.Client, st *localcluster.State, schedulerName string, podGroups schema.GroupVersionResource) (spread, completed time.Duration) {
	t.Helper()
	ctx := context.Background()
	ns := newNamespace(t, pj)
	cs := pj.Clientset()
	startBlocker(t, pj, ns)

	job := testutil.MakePaddleJob("gang", ns).Workers(gangPods).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sh", "-c", "echo started; sleep 2").Obj()
	tmpl := &job.Spec.Worker.Template.Spec
	tmpl.SchedulerName = schedulerName
	tmpl.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(gangPodCPU)}
	createJob(t, pj, job)

	// The scheduler has seen the group and turned it down...
	waitForTheGangTurnedDown(t, pj, dynamicClient(t, st), ns, job.Name, schedulerName, podGroups)
	// ...and no pod of it holds the node.
	pods, err := pj.Pods(ctx, ns, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			t.Fatalf("pod %s was bound to %s while its group could not fit whole", p.Name, p.Spec.NodeName)
		}
	}
	t.Logf("%d of the gang's pods exist, none bound", len(pods))

	if err := cs.CoreV1().Pods(ns).Delete(ctx, "blocker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	done, err := pj.WaitFor(ctx, ns, job.Name, client.Finished, jobTimeout)
	if err != nil {
		dumpJob(t, pj, ns, job.Name)
		t.Fatal(err)
	}
	completed = time.Since(freed)
	mustComplete(t, pj, done)
	t.Logf("the gang completed %s after the blocker was deleted", completed.Round(100*time.Millisecond))
	// Every pod was placed by the gang scheduler, after the blocker went.
	pods, err = pj.Pods(ctx, ns, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != gangPods {
		t.Fatalf("%d pods after completion, want %d (cleanPodPolicy Never)", len(pods), gangPods)
	}
	bound := checkBoundByAfter(t, pj, ns, pods, schedulerName, freed)
	return slices.MaxFunc(bound, time.Time.Compare).Sub(slices.MinFunc(bound, time.Time.Compare)), completed
}

// scheduledAt is when the scheduler reported a pod's Scheduled event, to the
// microsecond where the scheduler writes events.k8s.io events (as the
// schedulers here do).
func scheduledAt(t testing.TB, pj *client.Client, ns, pod string) time.Time {
	t.Helper()
	evs, err := pj.Clientset().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + pod + ",reason=Scheduled"})
	if err != nil || len(evs.Items) == 0 {
		t.Fatalf("the Scheduled event of %s: %d events, %v", pod, len(evs.Items), err)
	}
	if e := evs.Items[0]; !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return evs.Items[0].LastTimestamp.Time
}

// scheduledBy is the component that reported a pod's Scheduled event.
func scheduledBy(t testing.TB, pj *client.Client, ns, pod string) string {
	t.Helper()
	var by string
	poll(t, 30*time.Second, "the Scheduled event of "+pod, func() (bool, string) {
		evs, err := pj.Clientset().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + pod + ",reason=Scheduled"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			by = e.Source.Component
			if by == "" {
				by = e.ReportingController
			}
			return true, by
		}
		return false, "no event"
	})
	return by
}

// Kueue, run by the local cluster, admits a plain batch/v1 Job sent to the
// LocalQueue default (a subtest of TestKueue): its webhook suspends the Job at creation, the
// manager makes it a Workload, admits it to the ClusterQueue and resumes
// it, and the Job runs to completion on the node.
func kueueAdmitsABatchJob(t *testing.T, pj *client.Client, st *localcluster.State) {
	ctx := context.Background()
	cs := pj.Clientset()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "queued", Namespace: "default",
			Labels: map[string]string{"kueue.x-k8s.io/queue-name": localcluster.KueueLocalQueue}},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo admitted"},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
			}},
		},
	}
	created, err := cs.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := metav1.DeletePropagationBackground
		if err := cs.BatchV1().Jobs("default").Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	if created.Spec.Suspend == nil || !*created.Spec.Suspend {
		t.Fatalf("Kueue's webhook did not suspend the Job at creation: suspend=%v", created.Spec.Suspend)
	}
	dyn := dynamicClient(t, st)
	poll(t, 2*time.Minute, "Kueue admits the Job's Workload", func() (bool, string) {
		wls, err := dyn.Resource(kueueWorkloads).Namespace("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, wl := range wls.Items {
			conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
			for _, c := range conds {
				c := c.(map[string]any)
				if c["type"] == "Admitted" && c["status"] == "True" {
					cq, _, _ := unstructured.NestedString(wl.Object, "status", "admission", "clusterQueue")
					return cq == localcluster.KueueClusterQueue, wl.GetName() + " admitted to ClusterQueue " + cq
				}
			}
		}
		return false, fmt.Sprintf("%d workloads, none admitted", len(wls.Items))
	})
	poll(t, 2*time.Minute, "the Job completes", func() (bool, string) {
		j, err := cs.BatchV1().Jobs("default").Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true, "complete"
			}
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				t.Fatalf("the Job failed: %s", c.Message)
			}
		}
		return false, fmt.Sprintf("suspend=%v active=%d succeeded=%d", *j.Spec.Suspend, j.Status.Active, j.Status.Succeeded)
	})
}
