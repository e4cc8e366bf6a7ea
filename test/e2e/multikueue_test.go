package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster"
)

// MultiKueue across two local clusters on this machine, each running Kueue
// and the operator: a manager, where the job is created, and a worker
// registered in it as a MultiKueueCluster, where Kueue's MultiKueue runs
// the job's copy (real Paddle) and from which it mirrors the job's status.

var multiKueueClusters = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "multikueueclusters"}

// multiKueueManager is, in the manager, what dispatches the jobs of
// LocalQueue paddle of ns to the worker: a MultiKueueCluster reading the
// worker's kubeconfig from Secret secret, a MultiKueueConfig, the
// MultiKueue AdmissionCheck, and a ClusterQueue (quota as kueueQuota's)
// that requires it.
func multiKueueManager(ns, secret string) string {
	return fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata:
  name: %[1]s-worker
spec:
  clusterSource:
    kubeConfig:
      locationType: Secret
      location: %[2]s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata:
  name: %[1]s
spec:
  clusters: ["%[1]s-worker"]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: %[1]s
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters:
    apiGroup: kueue.x-k8s.io
    kind: MultiKueueConfig
    name: %[1]s
---
`, ns, secret) + kueueQueues(ns, `  admissionChecksStrategy:
    admissionChecks:
    - name: `+ns+`
`)
}

func TestMultiKueue(t *testing.T) {
	t.Parallel()
	worker, workerClient := withAddons(t, localcluster.AddonKueue)
	manager, managerClient := withAddons(t, localcluster.AddonKueue)
	managerDyn := dynamicClient(t, manager)
	pj := workerClient // the helpers below read the worker
	ctx := context.Background()

	// The same namespace in both clusters, the worker's LocalQueue of the
	// manager's name.
	ns := newNamespace(t, pj)
	if _, err := managerClient.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{localcluster.PodSecurityEnforceLabel: localcluster.PodSecurityPrivileged}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	applyManifests(t, worker, kueueQuota(ns))
	kubeconfig, err := os.ReadFile(worker.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ns + "-worker", Namespace: localcluster.KueueNamespace},
		Data: map[string][]byte{"kubeconfig": kubeconfig}}
	if _, err := managerClient.Clientset().CoreV1().Secrets(localcluster.KueueNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	applyManifests(t, manager, multiKueueManager(ns, secret.Name))
	poll(t, 2*time.Minute, "the manager's Kueue connects to the worker", func() (bool, string) {
		mkc, err := managerDyn.Resource(multiKueueClusters).Get(ctx, ns+"-worker", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s, r, m := workloadCondition(mkc, "Active")
		return s == "True", r + ": " + m
	})

	job := queuedJob(t, ns, "dispatched", "low", 3)
	job.Spec.ManagedBy = ptr.To(paddlev1.ManagedByMultiKueue)
	recoverable(job)
	start := time.Now()
	if _, err := managerClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	poll(t, 2*time.Minute, "MultiKueue creates the job's copy in the worker", func() (bool, string) {
		if _, err := workerClient.Get(ctx, ns, job.Name); err != nil {
			return false, err.Error()
		}
		return true, "created"
	})
	// The copy runs real Paddle in the worker: the processes report their
	// roles and the model learns.
	done, logs := awaitCompletion(t, pj, job, start)
	checkPSJob(t, done, logs)

	poll(t, 2*time.Minute, "the manager's job is mirrored Completed and its Workload finished", func() (bool, string) {
		got, err := managerClient.Get(ctx, ns, job.Name)
		if err != nil {
			return false, err.Error()
		}
		wl := jobWorkload(t, managerDyn, got)
		if wl == nil {
			return false, "phase " + string(got.Status.Phase) + ", no Workload"
		}
		s, r, _ := workloadCondition(wl, "Finished")
		return got.Status.Phase == paddlev1.PaddleJobCompleted && s == "True" && r == "Succeeded",
			fmt.Sprintf("phase %s, Workload Finished=%s/%s", got.Status.Phase, s, r)
	})
	mirrored, err := managerClient.Get(ctx, ns, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	// The manager's status is the worker's, copied: the completion time is
	// the one the worker's operator recorded.
	if mirrored.Status.CompletionTime == nil || !mirrored.Status.CompletionTime.Equal(done.Status.CompletionTime) {
		t.Errorf("the manager's job completed at %v, the worker's copy at %v: not mirrored", mirrored.Status.CompletionTime, done.Status.CompletionTime)
	}
	if pods, err := managerClient.Pods(ctx, ns, job.Name); err != nil || len(pods) != 0 {
		t.Errorf("%d pods in the manager (%v): the job ran there", len(pods), err)
	}
}
