package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// PaddleJobs queued by the real Kueue (v0.19.2, built from its module), which
// knows them as an external framework: quota, waiting, admission,
// preemption by priority, and MultiKueue's jobs queued but not run.

// kueueQuota is a ClusterQueue with CPU for one 4-pod job of podCPU each,
// preempting lower priorities within itself, and its queues (kueueQueues).
func kueueQuota(ns string) string {
	return kueueQueues(ns, `  preemption:
    withinClusterQueue: LowerPriority
`)
}

// kueueQueues is a ClusterQueue named ns with one CPU of quota and the
// spec lines given (indented as its spec's fields), its LocalQueue paddle in
// ns, and two WorkloadPriorityClasses: ns-low and ns-high.
func kueueQueues(ns, queueSpec string) string {
	return fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: %[1]s
spec:
  namespaceSelector: {}
%[2]s  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: default
      resources:
      - name: cpu
        nominalQuota: "1"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: paddle
  namespace: %[1]s
spec:
  clusterQueue: %[1]s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: %[1]s-low
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: %[1]s-high
value: 1000
`, ns, queueSpec)
}

const podCPU = "250m"

// queuedJob is paddle-operator's example 1 (2 pservers, 2 trainers) sent to the
// LocalQueue paddle with the priority class given, each pod asking podCPU;
// passes sets how long it trains.
func queuedJob(t *testing.T, ns, name, priority string, passes int) *paddlev1.PaddleJob {
	t.Helper()
	job := loadJob(t, "config/samples/seed004/example-1-wide-and-deep.yaml")
	job.Name, job.Namespace = name, ns
	job.Labels = map[string]string{paddlev1.KueueQueueNameLabel: "paddle", paddlev1.KueuePriorityClassLabel: ns + "-" + priority}
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		c := &job.Spec.Replicas(rt).Template.Spec.Containers[0]
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(podCPU)}
		c.Env = append(c.Env, corev1.EnvVar{Name: "PASSES", Value: fmt.Sprint(passes)})
	}
	return job
}

func applyManifests(t *testing.T, st *localcluster.State, manifests string) {
	t.Helper()
	cfg, err := kube.LoadConfig(st.Kubeconfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := kube.NewApplier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kube.DecodeManifests([]byte(manifests))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		// Kueue's webhooks may take a moment to answer for new kinds.
		poll(t, time.Minute, "creating "+o.GetKind()+" "+o.GetName(), func() (bool, string) {
			if err := a.Apply(context.Background(), o, ""); err != nil {
				return false, err.Error()
			}
			return true, "applied"
		})
	}
}

// jobWorkload is the Workload the operator made for a job, or nil.
func jobWorkload(t *testing.T, dyn dynamic.Interface, job *paddlev1.PaddleJob) *unstructured.Unstructured {
	t.Helper()
	list, err := dyn.Resource(kueueWorkloads).Namespace(job.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: paddlev1.LabelJobName + "=" + job.Name})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.Kind == "PaddleJob" && ref.Name == job.Name {
			return &list.Items[i]
		}
	}
	return nil
}

func workloadCondition(wl *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	for _, c := range conds {
		m := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", ""
}

func jobPodCount(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) int {
	t.Helper()
	pods, err := pj.Pods(context.Background(), job.Namespace, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	return len(pods)
}

func getJob(t *testing.T, pj *client.Client, job *paddlev1.PaddleJob) *paddlev1.PaddleJob {
	t.Helper()
	got, err := pj.Get(context.Background(), job.Namespace, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestKueue(t *testing.T) {
	t.Parallel()
	st, pj := withAddons(t, localcluster.AddonKueue)
	dyn := dynamicClient(t, st)

	t.Run("a labelled batch Job is admitted", func(t *testing.T) { kueueAdmitsABatchJob(t, pj, st) })

	t.Run("the second job waits for the first one's quota", func(t *testing.T) {
		ns := newNamespace(t, pj)
		applyManifests(t, st, kueueQuota(ns))
		first, second := queuedJob(t, ns, "first", "low", 5), queuedJob(t, ns, "second", "low", 5)
		start := time.Now()
		createJob(t, pj, first)
		created, err := pj.Get(context.Background(), ns, first.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !created.Spec.IsSuspended() {
			t.Fatal("the webhook did not create the queued job suspended")
		}
		poll(t, 2*time.Minute, "the first job is admitted and runs", func() (bool, string) {
			j := getJob(t, pj, first)
			return j.Status.Phase == paddlev1.PaddleJobRunning || j.Status.IsFinished(), string(j.Status.Phase)
		})
		createJob(t, pj, second)
		poll(t, time.Minute, "the second job is Queued, saying why", func() (bool, string) {
			j := getJob(t, pj, second)
			c := meta.FindStatusCondition(j.Status.Conditions, paddlev1.JobSuspended)
			if j.Status.Phase != paddlev1.PaddleJobQueued || c == nil || c.Reason != "Queued" {
				return false, string(j.Status.Phase)
			}
			if !strings.Contains(c.Message, "LocalQueue paddle") || !strings.Contains(c.Message, "quota") {
				return false, c.Message
			}
			return true, c.Message
		})
		if !getJob(t, pj, first).Status.IsFinished() {
			if n := jobPodCount(t, pj, second); n != 0 {
				t.Errorf("the waiting job has %d pods", n)
			}
		}
		done1, _ := awaitCompletion(t, pj, first, start)
		done2, _ := awaitCompletion(t, pj, second, start)
		if done2.Status.StartTime == nil || done2.Status.StartTime.Before(done1.Status.CompletionTime) {
			t.Errorf("the second job started at %v, before the first completed at %v", done2.Status.StartTime, done1.Status.CompletionTime)
		}
		for _, j := range []*paddlev1.PaddleJob{done1, done2} {
			wl := jobWorkload(t, dyn, j)
			if wl == nil {
				t.Fatalf("%s has no Workload", j.Name)
			}
			if s, r, _ := workloadCondition(wl, "Finished"); s != "True" || r != "Succeeded" {
				t.Errorf("%s's Workload Finished=%s/%s, want True/Succeeded", j.Name, s, r)
			}
		}
	})

	t.Run("a higher priority preempts, the lower resumes after it", func(t *testing.T) {
		kueuePreemptsByPriority(t, pj, st, dyn)
	})

	t.Run("a job MultiKueue manages is queued, its pods and status left to MultiKueue", func(t *testing.T) {
		kueueQueuesAMultiKueueJob(t, pj, st, dyn)
	})
}

// kueuePreemptsByPriority: a higher priority job preempts a running lower
// one, which is stopped with its templates restored and resumes after it.
func kueuePreemptsByPriority(t *testing.T, pj *client.Client, st *localcluster.State, dyn dynamic.Interface) {
	ns := newNamespace(t, pj)
	applyManifests(t, st, kueueQuota(ns))
	low, high := queuedJob(t, ns, "low", "low", 40), queuedJob(t, ns, "high", "high", 3)
	start := time.Now()
	createJob(t, pj, low)
	written := getJob(t, pj, low)
	poll(t, 2*time.Minute, "the low-priority job runs", func() (bool, string) {
		j := getJob(t, pj, low)
		return j.Status.Phase == paddlev1.PaddleJobRunning, string(j.Status.Phase)
	})
	admittedTemplate := getJob(t, pj, low).Spec.Worker.Template
	if admittedTemplate.Labels["kueue.x-k8s.io/podset"] != "worker" {
		t.Errorf("the admitted worker template's labels %v lack Kueue's pod set", admittedTemplate.Labels)
	}
	createJob(t, pj, high)
	poll(t, 2*time.Minute, "the low-priority job is preempted: suspended, its pods removed", func() (bool, string) {
		j := getJob(t, pj, low)
		n := jobPodCount(t, pj, low)
		return j.Spec.IsSuspended() && n == 0, fmt.Sprintf("suspend=%v pods=%d phase=%s", j.Spec.IsSuspended(), n, j.Status.Phase)
	})
	evicted := getJob(t, pj, low)
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		if !equality.Semantic.DeepEqual(evicted.Spec.Replicas(rt).Template, written.Spec.Replicas(rt).Template) {
			t.Errorf("the preempted job's %s template is not restored:\n got %+v\nwant %+v", rt, evicted.Spec.Replicas(rt).Template, written.Spec.Replicas(rt).Template)
		}
	}
	if s, r, _ := workloadCondition(jobWorkload(t, dyn, low), "Evicted"); s != "True" || r != "Preempted" {
		t.Errorf("the low job's Workload Evicted=%s/%s, want True/Preempted", s, r)
	}
	doneHigh, _ := awaitCompletion(t, pj, high, start)
	doneLow, _ := awaitCompletion(t, pj, low, start)
	if doneLow.Status.CompletionTime.Before(doneHigh.Status.CompletionTime) {
		t.Errorf("the preempted job completed before the one that preempted it")
	}
}

// kueueQueuesAMultiKueueJob: a job MultiKueue manages is queued as in a
// manager cluster, but the operator runs none of its pods and writes none of
// its status.
func kueueQueuesAMultiKueueJob(t *testing.T, pj *client.Client, st *localcluster.State, dyn dynamic.Interface) {
	ns := newNamespace(t, pj)
	applyManifests(t, st, kueueQuota(ns))
	// As in a manager cluster: Kueue queues the job here, MultiKueue
	// runs it elsewhere. (This cluster has no MultiKueue admission
	// check, so its Workload is admitted here; it asks for no CPU, to
	// leave the quota to the other job.)
	remote := queuedJob(t, ns, "remote", "low", 1)
	remote.Spec.ManagedBy = ptr.To(paddlev1.ManagedByMultiKueue)
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		remote.Spec.Replicas(rt).Template.Spec.Containers[0].Resources.Requests = nil
	}
	createJob(t, pj, remote)
	poll(t, 2*time.Minute, "the MultiKueue job's Workload is created and admitted, and the job resumed", func() (bool, string) {
		wl := jobWorkload(t, dyn, remote)
		if wl == nil {
			return false, "no Workload yet"
		}
		s, _, _ := workloadCondition(wl, "Admitted")
		suspended := getJob(t, pj, remote).Spec.IsSuspended()
		return s == "True" && !suspended, fmt.Sprintf("Admitted=%s suspend=%v", s, suspended)
	})
	// A job the operator runs, created after it, completes: by then the
	// operator has long seen the other one.
	local := queuedJob(t, ns, "local", "low", 1)
	createJob(t, pj, local)
	if _, err := pj.WaitFor(context.Background(), ns, local.Name, client.Finished, jobTimeout); err != nil {
		t.Fatal(err)
	}
	got := getJob(t, pj, remote)
	if got.Status.Phase != "" || len(got.Status.Conditions) != 0 || jobPodCount(t, pj, remote) != 0 {
		t.Errorf("the operator ran a job MultiKueue manages: phase %q, conditions %v, %d pods",
			got.Status.Phase, got.Status.Conditions, jobPodCount(t, pj, remote))
	}
}
