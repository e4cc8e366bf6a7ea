package podcontract

import (
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// Which servers hold their trainers back in fleet.init until they joined
// Gloo, and so are waited for only until they run: at level 2 over files
// every server; over the HTTP store none (the store container serves it and
// the servers are at level 0).
func TestGlooWaitsForWorkers(t *testing.T) {
	ps := func() *testutil.JobWrapper { return testutil.MakePaddleJob("g", "").PS(2).Workers(2) }
	tests := []struct {
		name  string
		spec  *paddlev1.PaddleJobSpec
		waits bool
		// serverLevel is the servers' PADDLE_WITH_GLOO.
		serverLevel int32
	}{
		{"Gloo off", &ps().Obj().Spec, false, 0},
		{"level 1 over HTTP: the store container serves the store", &ps().WithGloo(1).Obj().Spec, false, 0},
		{"level 2 over HTTP", &ps().WithGloo(2).Obj().Spec, false, 0},
		{"level 1 over files: the servers' own group", &withGlooDir(ps()).WithGloo(1).Obj().Spec, false, 1},
		{"level 2 over files: every server joins the group of all processes", &withGlooDir(ps()).WithGloo(2).Obj().Spec, true, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := GlooWaitsForWorkers(tc.spec, paddlev1.ReplicaPS); got != tc.waits {
				t.Errorf("servers wait for the workers: %v, want %v", got, tc.waits)
			}
			if GlooWaitsForWorkers(tc.spec, paddlev1.ReplicaWorker) {
				t.Error("a worker counted as a server")
			}
			if got := GlooLevel(tc.spec, paddlev1.ReplicaPS); got != tc.serverLevel {
				t.Errorf("servers' PADDLE_WITH_GLOO %d, want %d", got, tc.serverLevel)
			}
			if got := GlooLevel(tc.spec, paddlev1.ReplicaWorker); got != tc.spec.GlooLevel() {
				t.Errorf("workers' PADDLE_WITH_GLOO %d, want the job's %d", got, tc.spec.GlooLevel())
			}
		})
	}
}

// withGlooDir sets PADDLE_GLOO_FS_PATH in the ps and worker templates.
func withGlooDir(w *testutil.JobWrapper) *testutil.JobWrapper {
	return w.Env(paddlev1.ReplicaPS, GlooFSPath, "/shared/gloo").Env(paddlev1.ReplicaWorker, GlooFSPath, "/shared/gloo")
}
