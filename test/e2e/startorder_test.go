package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// An unmodified parameter-server program whose trainers call
// fleet.init_worker() as soon as they start — no wait for the servers of
// their own, on Paddle 3.0, whose wait_server_ready returns at once — trains
// ten times in a row without a restart: the operator starts the trainers
// only once every parameter server accepts connections (its readiness
// probe). paddle-operator's example 5 as written, with Gloo off as it is there.
func TestTrainersStartAfterTheServersListen(t *testing.T) {
	code := wideAndDeepWithoutServerWait(t)
	for run := 1; run <= 10; run++ {
		t.Run(fmt.Sprintf("run %d", run), func(t *testing.T) {
			ns := newNamespace(t)
			applyLocalPV(t, ns, code)
			job := loadJob(t, "config/samples/seed004/example-5-data-demo.yaml")
			job.Namespace = ns
			for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
				c := &job.Spec.Replicas(rt).Template.Spec.Containers[0]
				c.Image = "registry.baidubce.com/paddle-operator/demo-wide-and-deep:v1"
				c.Env = append(c.Env, corev1.EnvVar{Name: "PASSES", Value: "3"})
			}
			done, logs := runInNamespace(t, job)
			checkPSJob(t, done, logs)
			if done.Status.RestartCount != 0 {
				t.Errorf("the job restarted %d times; its trainers must find every server listening", done.Status.RestartCount)
			}
		})
	}
}

// wideAndDeepWithoutServerWait is the unmodified wide & deep program
// (unmodifiedWideAndDeep) without its own wait for the servers either.
func wideAndDeepWithoutServerWait(t *testing.T) string {
	t.Helper()
	code := unmodifiedWideAndDeep(t)
	train := filepath.Join(code, "wide_and_deep", "train.py")
	src := mustReadAbs(t, train)
	stripped := regexp.MustCompile(`(?m)^\s*wait_for_servers\(servers, args\.server_timeout\)\n`).ReplaceAllString(src, "")
	if stripped == src || regexp.MustCompile(`wait_for_servers\(`).MatchString(stripped) {
		t.Fatalf("train.py no longer waits for the servers the way this test removes it")
	}
	if err := os.WriteFile(train, []byte(stripped), 0o644); err != nil {
		t.Fatal(err)
	}
	return code
}
