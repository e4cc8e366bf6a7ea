package main

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// A failed job ends run --follow=all, whatever its pods do: a parameter
// server still running, a trainer that failed, one that never started.
// None of their log streams ends by itself here; once the grace is over,
// run stops them all and returns the job's failure (exit code 1).
func TestRunFollowReturnsWhenTheJobFails(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").UID("wd-uid").PS(1).Workers(2).Status(paddlev1.PaddleJobStatus{
		Phase: paddlev1.PaddleJobFailed,
		Conditions: []metav1.Condition{{Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: "PodFailed",
			Message: `pod wd-worker-0: container "paddle" exited with code 3 (Error)`, LastTransitionTime: metav1.Now()}},
	}).Obj()
	pods := []runtime.Object{
		testutil.MakePod(job, paddlev1.ReplicaPS, 0).Running("10.0.0.1").Obj(),
		testutil.MakePod(job, paddlev1.ReplicaWorker, 0).Failed("paddle", 3).Obj(),
		testutil.MakePod(job, paddlev1.ReplicaWorker, 1).Obj(), // never started
	}
	c := client.NewForClients(nil, ctrlfake.NewClientBuilder().WithScheme(kube.Scheme).WithRuntimeObjects(job).Build(), k8sfake.NewClientset(pods...))

	var mu sync.Mutex
	var streamed, stopped []string
	grace := make(chan time.Time)
	fl := follower{
		c: c,
		stream: func(ctx context.Context, ns, pod, prefix string) {
			mu.Lock()
			streamed = append(streamed, prefix)
			mu.Unlock()
			<-ctx.Done() // a log that never ends by itself
			mu.Lock()
			stopped = append(stopped, prefix)
			mu.Unlock()
		},
		drainAfter: func() <-chan time.Time {
			close(grace) // the grace is over at once
			return grace
		},
	}
	var errOut bytes.Buffer
	err := fl.run(context.Background(), &runFlags{follow: []string{"all"}}, "ns", "wd", &errOut)
	var exit exitError
	if !errors.As(err, &exit) || exit.code != 1 || !strings.Contains(exit.msg, `PaddleJob ns/wd failed: PodFailed: pod wd-worker-0: container "paddle" exited with code 3`) {
		t.Fatalf("run ended with %v (%T), want exit code 1 and the failure:\n%s", err, err, errOut.String())
	}
	slices.Sort(streamed)
	slices.Sort(stopped)
	want := []string{"[ps-0] ", "[worker-0] ", "[worker-1] "}
	if !slices.Equal(streamed, want) || !slices.Equal(stopped, want) {
		t.Errorf("streams started %q and stopped %q, want every pod's: %q", streamed, stopped, want)
	}
}

// drain waits for the streams that end by themselves until the grace is
// over, then stops the others; it returns once all have returned.
func TestLogStreamsDrain(t *testing.T) {
	logs := newLogStreams(context.Background())
	release, ended := make(chan struct{}), make(chan struct{})
	var endedByItself, stoppedByDrain bool
	logs.start("worker-0", func(ctx context.Context) {
		defer close(ended)
		select {
		case <-release: // its container's last lines arrive
			endedByItself = true
		case <-ctx.Done():
		}
	})
	logs.start("worker-1", func(ctx context.Context) {
		<-ctx.Done() // never started: nothing ends it but the drain
		stoppedByDrain = true
	})
	logs.start("worker-0", func(context.Context) { t.Error("a pod's log streamed twice") })

	grace := make(chan time.Time)
	drained := make(chan struct{})
	go func() {
		logs.drain(grace)
		close(drained)
	}()
	close(release)
	<-ended
	select {
	case <-drained:
		t.Fatal("drain returned before the grace was over, with a stream still open")
	default:
	}
	close(grace)
	<-drained
	if !endedByItself || !stoppedByDrain {
		t.Errorf("worker-0 ended by itself: %v (want true); worker-1 stopped by the drain: %v (want true)", endedByItself, stoppedByDrain)
	}
}

// The pods whose logs --follow streams.
func TestFollowedPods(t *testing.T) {
	pod := func(name, role string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{paddlev1.LabelReplicaType: role}}}
	}
	for _, tc := range []struct {
		selectors []string
		pod       *corev1.Pod
		want      bool
	}{
		{[]string{"all"}, pod("wd-ps-0", "ps"), true},
		{[]string{"worker"}, pod("wd-worker-1", "worker"), true},
		{[]string{"worker"}, pod("wd-ps-0", "ps"), false},
		{[]string{"ps-0", "worker-1"}, pod("wd-worker-1", "worker"), true},
		{[]string{"wd-ps-0"}, pod("wd-ps-0", "ps"), true},
		{nil, pod("wd-ps-0", "ps"), false},
	} {
		if got := followed(tc.selectors, "wd", tc.pod); got != tc.want {
			t.Errorf("followed(%q, %s) = %v, want %v", tc.selectors, tc.pod.Name, got, tc.want)
		}
	}
}
