package kueue

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestHoldMessage(t *testing.T) {
	suspended := queuedJob().Suspend(true).Obj()
	running := queuedJob().Suspend(false).Obj()
	// Kueue before 0.18 names the prebuilt Workload in a label.
	prebuilt := queuedJob().Suspend(true).Label(kueuePrebuiltWorkloadKey, "from-manager").Obj()
	pending := wlOf(suspended, workloadQuotaReserved+"=-Pending")
	pending.Status.Conditions[0].Message = "couldn't assign flavors to pod set worker: insufficient quota for cpu"
	deleting := admitted(wlOf(running, workloadQuotaReserved, workloadAdmitted), "default", nil)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		wl   *workload
		want []string // "" alone: not held
	}{
		{"no Workload yet", suspended, nil, []string{"LocalQueue " + testQueue, "being created"}},
		{"a running job without a Workload is held too", running, nil, []string{"LocalQueue " + testQueue}},
		{"MultiKueue's Workload not there yet", prebuilt, nil, []string{"from-manager", "MultiKueue"}},
		{"waiting for quota, in Kueue's words", suspended, pending, []string{"LocalQueue " + testQueue, workloadName(suspended), "insufficient quota for cpu"}},
		{"evicted", suspended, wlOf(suspended, workloadQuotaReserved, workloadEvicted+"="+workloadPreempted), []string{"evicted", workloadPreempted}},
		{"admitted, not resumed yet", suspended, admitted(wlOf(suspended, workloadQuotaReserved, workloadAdmitted), "default", nil), []string{"admitted", "starting"}},
		{"admitted and resumed: not held", running, admitted(wlOf(running, workloadQuotaReserved, workloadAdmitted), "default", nil), []string{""}},
		{"admitted but being deleted", running, deleting, []string{"LocalQueue " + testQueue}},
		{"admitted, partially, refused", suspended, admitted(wlOf(suspended, workloadQuotaReserved, workloadAdmitted), "default", map[string]int32{"ps": 0}), []string{"0 of the 1 ps pods"}},
		{"finished without running", suspended, wlOf(suspended, workloadFinished+"="+workloadOutOfSync), []string{workloadOutOfSync}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := holdMessage(job{tt.job}, tt.wl)
			if len(tt.want) == 1 && tt.want[0] == "" {
				if got != "" {
					t.Errorf("held: %q", got)
				}
				return
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("hold %q does not say %q", got, w)
				}
			}
		})
	}
}

func TestHoldWithoutKueueServed(t *testing.T) {
	ctx := context.Background()
	q := Queue{Served: false}
	if msg, err := q.Hold(ctx, queuedJob().Suspend(true).Obj()); err != nil || !strings.Contains(msg, paddlev1.KueueFrameworkName) {
		t.Errorf("Hold = %q, %v: want it to say how to install Kueue for PaddleJobs", msg, err)
	}
	if msg, err := q.Hold(ctx, queuedJob().Suspend(false).Obj()); err != nil || msg != "" {
		t.Errorf("Hold = %q, %v: without Kueue a running job runs", msg, err)
	}
	if q.Watched() != nil {
		t.Errorf("Watched %v: nothing to watch without Kueue", q.Watched())
	}
}

func TestHoldReadsTheJobsWorkload(t *testing.T) {
	pj := queuedJob().Suspend(false).Obj()
	plain := testutil.MakePaddleJob("plain", "ns").UID("plain-uid").Workers(1).Obj()
	f := newFixture(t, pj, plain, workloadObject(t, wlOf(pj, workloadQuotaReserved+"=-Pending")))
	q := Queue{Reader: f.client, Served: true}
	if msg, err := q.Hold(context.Background(), pj); err != nil || !strings.Contains(msg, workloadName(pj)) {
		t.Errorf("Hold = %q, %v: want the running job held, naming its unadmitted Workload", msg, err)
	}
	if msg, err := q.Hold(context.Background(), plain); err != nil || msg != "" {
		t.Errorf("Hold = %q, %v: a job no queue names is not held", msg, err)
	}
}
