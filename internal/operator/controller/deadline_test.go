package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestDeadline(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := testutil.MakePaddleJob("j", "ns").Workers(1).Obj()
	if exceeded, left := deadlineExceeded(job, t0); exceeded || left != 0 {
		t.Errorf("no deadline: %v %s", exceeded, left)
	}
	job.Spec.ActiveDeadlineSeconds = ptr.To[int64](20)
	start := metav1.NewTime(t0)
	job.Status.StartTime = &start
	if exceeded, left := deadlineExceeded(job, t0.Add(15*time.Second)); exceeded || left != 5*time.Second {
		t.Errorf("5 s before the deadline: %v %s", exceeded, left)
	}
	if exceeded, _ := deadlineExceeded(job, t0.Add(20*time.Second)); !exceeded {
		t.Error("the deadline did not fire at 20 s")
	}
}
