package e2e

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster"
)

// Every component of the local cluster is supervised: killed with SIGKILL
// mid-job, one after the other, each comes back (paddlejob status counts the
// restart) and the job still completes with real Paddle.
func TestKilledComponentsComeBack(t *testing.T) {
	t.Parallel()
	home, err := os.MkdirTemp("", "paddlejob-e2e-supervision-")
	if err != nil {
		t.Fatal(err)
	}
	o := opts
	o.Home = home
	_, pj := withCluster(t, o)

	job := loadJob(t, "config/samples/seed004/example-1-wide-and-deep.yaml")
	job.Namespace = newNamespace(t, pj)
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		rs := job.Spec.Replicas(rt)
		c := &rs.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "PASSES", Value: "30"})
		// The node's restart fails the pods it had started (exit code 137):
		// the policy restarts the job (as a whole, in parameter-server mode).
		rs.RestartPolicy = paddlev1.RestartPolicyExitCode
	}
	start := time.Now()
	createJob(t, pj, job)
	poll(t, 2*time.Minute, "the job runs", func() (bool, string) {
		j := getJob(t, pj, job)
		return j.Status.Phase == paddlev1.PaddleJobRunning, string(j.Status.Phase)
	})

	// The cluster network's restart cuts the pods' connections to the host
	// (the node attaches again by itself). The node last: its pods die
	// with it, and it reports them Failed (NodeRestarted, exit code 137)
	// when it comes back.
	for _, name := range []string{"paddlejob-operator", "elastic-etcd-guard", "elastic-etcd", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd", "paddlejob-network", "paddlejob-node"} {
		before := component(t, o, name)
		if before.PID == 0 || before.State != "running" {
			t.Fatalf("%s is not running: %+v", name, before)
		}
		if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
			t.Fatalf("killing %s (pid %d): %v", name, before.PID, err)
		}
		poll(t, time.Minute, name+" comes back", func() (bool, string) {
			now := component(t, o, name)
			return now.Restarts == before.Restarts+1 && now.State == "running" && now.PID != before.PID,
				fmt.Sprintf("pid %d, %d restarts, %s, last exit %s", now.PID, now.Restarts, now.State, now.LastExit)
		})
	}
	done, _ := awaitCompletion(t, pj, job, start)
	if done.Status.Phase != paddlev1.PaddleJobCompleted {
		t.Errorf("the job ended %s", done.Status.Phase)
	}
}

// component is one component's line of `paddlejob status`.
func component(t *testing.T, o localcluster.Options, name string) localcluster.ComponentStatus {
	t.Helper()
	rep, err := localcluster.Report(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Components {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no component %s in %+v", name, rep.Components)
	return localcluster.ComponentStatus{}
}
