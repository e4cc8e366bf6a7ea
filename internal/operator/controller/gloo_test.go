package controller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// sharedDir is a PADDLE_GLOO_FS_PATH a job's templates set.
const sharedDir = "/shared/gloo"

// withGlooDir sets PADDLE_GLOO_FS_PATH in the ps and worker templates.
func withGlooDir(w *testutil.JobWrapper) *testutil.JobWrapper {
	return w.Env(paddlev1.ReplicaPS, podcontract.GlooFSPath, sharedDir).Env(paddlev1.ReplicaWorker, podcontract.GlooFSPath, sharedDir)
}

// Which rendezvous each pod's role maker is given: the file-system one only
// in parameter-server mode, with Gloo on and a shared directory, and never
// on heter pods; the HTTP store otherwise.
func TestGlooRendezvous(t *testing.T) {
	ps := func() *testutil.JobWrapper { return testutil.MakePaddleJob("g", "").UID("g-uid").PS(2).Workers(2) }
	const httpStore = "3 g-ns-g"
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		// want is, per pod, PADDLE_WITH_GLOO, then PADDLE_GLOO_RENDEZVOUS and
		// SYS_JOB_ID ("file" when SYS_JOB_ID is the attempt's prefix), or
		// "-" where they are unset.
		want map[string]string
	}{
		{"level 0: Gloo off, no rendezvous", ps().WithGloo(0).Obj(),
			map[string]string{"g-ps-0": "0 -", "g-worker-1": "0 -"}},
		{"level 2 without a shared directory: the HTTP store, the servers off it", ps().WithGloo(2).Obj(),
			map[string]string{"g-ps-0": "0 " + httpStore, "g-ps-1": "0 " + httpStore, "g-worker-0": "2 " + httpStore}},
		{"level 2 with a shared directory: files, on servers and workers", withGlooDir(ps()).WithGloo(2).Obj(),
			map[string]string{"g-ps-0": "2 2 file", "g-ps-1": "2 2 file", "g-worker-0": "2 2 file", "g-worker-1": "2 2 file"}},
		{"level 1 with a shared directory: files too", withGlooDir(ps()).WithGloo(1).Obj(),
			map[string]string{"g-ps-0": "1 2 file", "g-worker-1": "1 2 file"}},
		{"level 0 with a shared directory: still off", withGlooDir(ps()).WithGloo(0).Obj(),
			map[string]string{"g-ps-0": "0 -", "g-worker-1": "0 -"}},
		{"heter pods keep the HTTP store, where Paddle gives them no group", withGlooDir(ps().Heter(1)).WithGloo(2).Obj(),
			map[string]string{"g-ps-1": "2 2 file", "g-worker-0": "2 2 file", "g-heter-0": "2 " + httpStore}},
		{"collective mode ignores the directory: its store is worker-0's", testutil.MakePaddleJob("g", "").Workers(2).
			Env(paddlev1.ReplicaWorker, podcontract.GlooFSPath, sharedDir).WithGloo(2).Obj(),
			map[string]string{"g-worker-1": "2 " + httpStore}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.job.Namespace = "g-ns"
			prefix := glooStorePrefix(tc.job, nil)
			for name, want := range tc.want {
				rt, index, err := paddlev1.ParsePodName(tc.job.Name, name)
				if err != nil {
					t.Fatal(err)
				}
				pod := newPod(tc.job, rt, index, podcontract.PortRange{First: 23000, Count: 3}, podOptions{glooStorePrefix: prefix})
				env := envOf(pod.Spec.Containers[0].Env)
				got := env["PADDLE_WITH_GLOO"] + " -"
				if r, ok := env["PADDLE_GLOO_RENDEZVOUS"]; ok {
					got = env["PADDLE_WITH_GLOO"] + " " + r + " " + env["SYS_JOB_ID"]
					if env["SYS_JOB_ID"] == prefix && prefix != "" {
						got = env["PADDLE_WITH_GLOO"] + " " + r + " file"
					}
				}
				if got != want {
					t.Errorf("%s: PADDLE_WITH_GLOO, PADDLE_GLOO_RENDEZVOUS, SYS_JOB_ID = %q, want %q (attempt prefix %q)", name, got, want, prefix)
				}
				if annotated := pod.Annotations[annotationGlooStorePrefix]; (annotated != "") != strings.HasSuffix(want, "file") || (annotated != "" && annotated != prefix) {
					t.Errorf("%s: annotation %s = %q, want the attempt's prefix only on pods that use files", name, annotationGlooStorePrefix, annotated)
				}
			}
		})
	}
}

func envOf(env []corev1.EnvVar) map[string]string {
	out := map[string]string{}
	for _, e := range env {
		out[e.Name] = e.Value
	}
	return out
}

// Each attempt of a job on files gets a store prefix of its own, and pods
// created while others of the job live join theirs.
func TestGlooStorePrefix(t *testing.T) {
	job := withGlooDir(testutil.MakePaddleJob("g", "ns").UID("g-uid").PS(1).Workers(1)).WithGloo(2).Obj()
	first := glooStorePrefix(job, nil)
	if !strings.HasPrefix(first, "ns-g-g-uid-0-") {
		t.Errorf("first attempt's prefix %q, want the job's name, UID and restart count 0 in it", first)
	}
	if again := glooStorePrefix(job, nil); again == first {
		t.Errorf("two attempts with no pod in between (a resume) both got %q", first)
	}
	live := testutil.MakePod(job, paddlev1.ReplicaPS, 0).Annotation(annotationGlooStorePrefix, first).Running("10.0.0.1").Obj()
	if got := glooStorePrefix(job, []*corev1.Pod{live}); got != first {
		t.Errorf("a pod created beside a live pod of attempt %q got %q", first, got)
	}
	going := testutil.MakePod(job, paddlev1.ReplicaPS, 0).Annotation(annotationGlooStorePrefix, first).Terminating().Obj()
	restarted := job.DeepCopy()
	restarted.Status.RestartCount = 3
	if got := glooStorePrefix(restarted, []*corev1.Pod{going}); got == first || !strings.HasPrefix(got, "ns-g-g-uid-3-") {
		t.Errorf("after a restart, beside a pod being deleted, the prefix is %q; want a new one with restart count 3 (the old was %q)", got, first)
	}
	if got := glooStorePrefix(testutil.MakePaddleJob("g", "ns").PS(1).Workers(1).WithGloo(2).Obj(), nil); got != "" {
		t.Errorf("a job on the HTTP store got prefix %q", got)
	}
}

// A reconcile pass gives every pod it creates the same prefix, and the pods
// of the next attempt, after a restart of the whole job, another.
func TestGlooStorePrefixAcrossAttempts(t *testing.T) {
	job := withGlooDir(testutil.MakePaddleJob("g", "ns").UID("g-uid").PS(2).Workers(2)).WithGloo(2).Obj()
	prefixes := func(pods map[string]*corev1.Pod) map[string]bool {
		out := map[string]bool{}
		for _, p := range pods {
			out[envOf(p.Spec.Containers[0].Env)["SYS_JOB_ID"]] = true
			if a := p.Annotations[annotationGlooStorePrefix]; !out[a] {
				t.Errorf("pod %s: annotation %q is not its SYS_JOB_ID", p.Name, a)
			}
		}
		return out
	}
	f := newFixture(t, Options{}, job)
	got := f.reconcile(t, job)
	if got.err != nil || len(got.pods) != 4 {
		t.Fatalf("first pass: %d pods, error %v", len(got.pods), got.err)
	}
	first := prefixes(got.pods)
	if len(first) != 1 {
		t.Fatalf("the pods of one attempt have prefixes %v, want one", first)
	}

	// The restart was recorded and every pod of the attempt is gone.
	restarted := job.DeepCopy()
	restarted.Status.RestartCount = 1
	f = newFixture(t, Options{}, restarted)
	second := prefixes(f.reconcile(t, restarted).pods)
	for p := range second {
		if first[p] || len(second) != 1 {
			t.Errorf("the attempt after a restart has prefixes %v, the one before %v: want one new prefix", second, first)
		}
	}

	// A pod recreated alone while its peers live joins their attempt.
	var old string
	for p := range first {
		old = p
	}
	peers := []*corev1.Pod{}
	for _, name := range []string{"g-ps-0", "g-ps-1", "g-worker-0"} {
		rt, i, _ := paddlev1.ParsePodName(job.Name, name)
		peers = append(peers, testutil.MakePod(job, rt, i).UID(name).Annotation(annotationGlooStorePrefix, old).Running("10.0.0.1").Obj())
	}
	f = newFixture(t, Options{}, objects(job, peers...)...)
	created := f.reconcile(t, job).pods["g-worker-1"]
	if created == nil || envOf(created.Spec.Containers[0].Env)["SYS_JOB_ID"] != old {
		t.Errorf("worker-1 recreated beside its live peers: %v, want SYS_JOB_ID %q", created, old)
	}
}
