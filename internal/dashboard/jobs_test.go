package dashboard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

type rowsEvent struct {
	Rows    []JobRow `json:"rows"`
	Upserts []JobRow `json:"upserts"`
	Deletes []string `json:"deletes"`
}

func names(rows []JobRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Namespace+"/"+r.Name)
	}
	return out
}

// The jobs page gets every row of its namespace once, then only the rows
// that change, live from the watch: a job's new phase, a new job, a job
// deleted. Another namespace's jobs are not its.
func TestJobsStreamSendsTheRowsThatChange(t *testing.T) {
	ctx := context.Background()
	a := testutil.MakePaddleJob("a", "team-a").PS(1).Workers(2).Obj()
	b := testutil.MakePaddleJob("b", "team-a").Workers(1).Obj()
	other := testutil.MakePaddleJob("c", "team-b").Workers(1).Obj()
	f := newFixture(t, fixtureOptions{}, a, b, other)
	s := f.stream(t, "/api/jobs/stream?namespace=team-a")

	var ev rowsEvent
	s.waitFor(t, "snapshot", &ev, func() bool { return true })
	if got := names(ev.Rows); !slices.Equal(got, []string{"team-a/a", "team-a/b"}) {
		t.Fatalf("snapshot rows %v, want team-a's two jobs in order", got)
	}
	if ev.Rows[0].Phase != SubmittedPhase || ev.Rows[0].Roles[1].Ready != "0/2" {
		t.Errorf("row of a job without status: %+v", ev.Rows[0])
	}

	// The operator moves a job on: its row alone comes.
	a.Status = paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning, Mode: paddlev1.PaddleJobModePS,
		PS: &paddlev1.ReplicaStatus{Running: 1, Ready: "1/1"}, Worker: &paddlev1.ReplicaStatus{Running: 2, Ready: "2/2"}}
	if err := f.ctrl.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "changes", &ev, func() bool { return len(ev.Upserts) > 0 })
	if got := names(ev.Upserts); !slices.Equal(got, []string{"team-a/a"}) || ev.Upserts[0].Phase != "Running" || ev.Upserts[0].Roles[1].Ready != "2/2" {
		t.Fatalf("changes %+v: want a's row, running with its workers ready", ev)
	}

	// A job created, one deleted; a job elsewhere changes nothing here.
	if err := f.ctrl.Create(ctx, testutil.MakePaddleJob("d", "team-a").Workers(1).Obj()); err != nil {
		t.Fatal(err)
	}
	if err := f.ctrl.Create(ctx, testutil.MakePaddleJob("e", "team-b").Workers(1).Obj()); err != nil {
		t.Fatal(err)
	}
	if err := f.ctrl.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	var upserts, deletes []string
	s.waitFor(t, "changes", &ev, func() bool {
		upserts, deletes = append(upserts, names(ev.Upserts)...), append(deletes, ev.Deletes...)
		return slices.Contains(upserts, "team-a/d") && slices.Contains(deletes, "team-a/b")
	})
	if slices.Contains(upserts, "team-b/e") {
		t.Errorf("team-b's job came to team-a's page: %v", upserts)
	}

	// A status write that changes nothing on the row sends nothing; the
	// next real change comes alone.
	a.Status.ObservedGeneration = 7
	if err := f.ctrl.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.Status.RestartCount = 1
	if err := f.ctrl.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "changes", &ev, func() bool { return len(ev.Upserts) > 0 })
	if len(ev.Upserts) != 1 || ev.Upserts[0].Restarts != 1 {
		t.Errorf("changes %+v: want a's row with its restart", ev)
	}
}

// All namespaces: one stream, every job.
func TestJobsStreamOfAllNamespaces(t *testing.T) {
	f := newFixture(t, fixtureOptions{},
		testutil.MakePaddleJob("a", "team-a").Workers(1).Obj(),
		testutil.MakePaddleJob("c", "team-b").Workers(1).Obj())
	var ev rowsEvent
	f.stream(t, "/api/jobs/stream?namespace=").waitFor(t, "snapshot", &ev, func() bool { return true })
	if got := names(ev.Rows); !slices.Equal(got, []string{"team-a/a", "team-b/c"}) {
		t.Errorf("rows %v, want both namespaces' jobs", got)
	}
	// A namespace without jobs: an empty page, live.
	var empty rowsEvent
	f.stream(t, "/api/jobs/stream?namespace=team-c").waitFor(t, "snapshot", &empty, func() bool { return true })
	if len(empty.Rows) != 0 {
		t.Errorf("rows %v in a namespace without jobs", names(empty.Rows))
	}
}

// A user who may not list the jobs of a namespace is told so by the page,
// with the API server's words; the dashboard has no other credentials to
// fall back on.
func TestJobsStreamSaysWhatTheUserMayNotList(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: paddlev1.GroupVersion.Group, Resource: "paddlejobs"}, "",
		fmt.Errorf(`User "alice" cannot list resource "paddlejobs" in API group "batch.paddlepaddle.org" in the namespace "secret"`))
	f := newFixture(t, fixtureOptions{interceptors: &interceptor.Funcs{
		List: func(ctx context.Context, c ctrlclient.WithWatch, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
			o := (&ctrlclient.ListOptions{}).ApplyOptions(opts)
			if _, ok := list.(*paddlev1.PaddleJobList); ok && o.Namespace == "secret" {
				return forbidden
			}
			return c.List(ctx, list, opts...)
		},
	}}, testutil.MakePaddleJob("a", "secret").Workers(1).Obj())
	for _, browser := range []string{"first", "second"} {
		// The second browser shares the first's informer, and is told too.
		var p Problem
		f.stream(t, "/api/jobs/stream?namespace=secret").waitFor(t, "problem", &p, func() bool { return p.Message != "" })
		if want := `User "alice" cannot list resource "paddlejobs"`; !strings.Contains(p.Message, want) {
			t.Errorf("%s browser: problem %q, want the API server's %q", browser, p.Message, want)
		}
	}
}

// BenchmarkJobsHub1000 measures the server's side of the jobs page with
// 1,000 jobs: summarising and encoding a job's row as its watch event
// arrives, and the snapshot a browser gets when it opens the page.
func BenchmarkJobsHub1000(b *testing.B) {
	jobs := make([]*paddlev1.PaddleJob, 1000)
	for i := range jobs {
		jobs[i] = benchJob(i)
	}
	h := &jobsHub{rows: map[string][]byte{}, pending: map[string][]byte{}, subs: map[*subscriber]bool{}}
	for _, j := range jobs {
		h.changed(j, false)
	}
	b.Run("row-of-a-changed-job", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			j := jobs[i%len(jobs)]
			p := *j.Status.Progress.Percent
			*j.Status.Progress.Percent = (p + 1) % 100
			h.changed(j, false)
		}
	})
	b.Run("snapshot", func(b *testing.B) {
		var size int
		for b.Loop() {
			h.mu.Lock()
			size = len(h.snapshotLocked())
			h.mu.Unlock()
		}
		b.ReportMetric(float64(size), "bytes/snapshot")
	})
}

func benchJob(i int) *paddlev1.PaddleJob {
	pct, eta, epoch, total := int32(i%100), int64(300), int64(2), int64(5)
	return testutil.MakePaddleJob(fmt.Sprintf("job-%04d", i), "bench").PS(2).Workers(4).Status(paddlev1.PaddleJobStatus{
		Phase: paddlev1.PaddleJobRunning, Mode: paddlev1.PaddleJobModePS,
		PS: &paddlev1.ReplicaStatus{Running: 2, Ready: "2/2"}, Worker: &paddlev1.ReplicaStatus{Running: 4, Ready: "4/4"},
		Progress: &paddlev1.JobProgress{Percent: &pct, EstimatedSecondsRemaining: &eta, Epoch: &epoch, TotalEpochs: &total,
			Metrics: []paddlev1.ProgressMetric{{Name: "auc", Value: "0.731"}, {Name: "loss", Value: "0.482"}}},
	}).Obj()
}
