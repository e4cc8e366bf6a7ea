package v1

import (
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParsePodName(t *testing.T) {
	for _, tc := range []struct {
		job, name string
		rt        ReplicaType
		index     int
		wantErr   bool
	}{
		{job: "ctr", name: "ctr-ps-0", rt: ReplicaPS, index: 0},
		{job: "ctr", name: "ctr-worker-12", rt: ReplicaWorker, index: 12},
		{job: "ctr", name: "ctr-heter-1", rt: ReplicaHeter, index: 1},
		{job: "a-worker-1", name: "a-worker-1-worker-2", rt: ReplicaWorker, index: 2},
		{job: "a-worker-1", name: "a-worker-1-ps-0", rt: ReplicaPS, index: 0},
		{job: "a", name: "a-worker-1-worker-2", wantErr: true}, // another job's pod
		{job: "ctr", name: "other-worker-0", wantErr: true},
		{job: "ctr", name: "ctr-trainer-0", wantErr: true},
		{job: "ctr", name: "ctr-worker-", wantErr: true},
		{job: "ctr", name: "ctr-worker-x", wantErr: true},
		{job: "ctr", name: "ctr-worker--1", wantErr: true},
		{job: "ctr", name: "ctr-worker-+1", wantErr: true},
		{job: "ctr", name: "ctr-worker-01", wantErr: true},
		{job: "", name: "-worker-0", wantErr: true},
	} {
		rt, i, err := ParsePodName(tc.job, tc.name)
		if (err != nil) != tc.wantErr || rt != tc.rt || i != tc.index {
			t.Errorf("ParsePodName(%q, %q) = %q, %d, %v; want %q, %d, error %v", tc.job, tc.name, rt, i, err, tc.rt, tc.index, tc.wantErr)
		}
	}
}

// operatorPod is a pod as the operator names and labels it.
func operatorPod(job string, rt ReplicaType, index int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: PodName(job, rt, index), Labels: map[string]string{
		LabelJobName: job, LabelReplicaType: string(rt), LabelReplicaIndex: strconv.Itoa(index),
	}}}
}

func TestPodReplica(t *testing.T) {
	edited := func(key, value string) *corev1.Pod {
		p := operatorPod("a-worker-1", ReplicaWorker, 2)
		p.Labels[key] = value
		return p
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		rt      ReplicaType
		index   int
		wantErr bool
	}{
		{name: "as the operator made it", pod: operatorPod("a-worker-1", ReplicaWorker, 2), rt: ReplicaWorker, index: 2},
		{name: "index label disagrees with the name", pod: edited(LabelReplicaIndex, "7"), wantErr: true},
		{name: "index label not a number", pod: edited(LabelReplicaIndex, "two"), wantErr: true},
		{name: "role label disagrees with the name", pod: edited(LabelReplicaType, "ps"), wantErr: true},
		{name: "job label names another job", pod: edited(LabelJobName, "a"), wantErr: true},
		{name: "no labels", pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a-worker-0"}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, i, err := PodReplica(tc.pod)
			if (err != nil) != tc.wantErr || rt != tc.rt || i != tc.index {
				t.Errorf("PodReplica = %q, %d, %v; want %q, %d, error %v", rt, i, err, tc.rt, tc.index, tc.wantErr)
			}
		})
	}
}

func TestComparePods(t *testing.T) {
	stray := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a-debug"}}
	want := []*corev1.Pod{
		operatorPod("a", ReplicaPS, 0), operatorPod("a", ReplicaPS, 1),
		operatorPod("a", ReplicaWorker, 2), operatorPod("a", ReplicaWorker, 10),
		operatorPod("a", ReplicaHeter, 0), stray,
	}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortStableFunc(got, ComparePods)
	if !slices.Equal(got, want) {
		var names []string
		for _, p := range got {
			names = append(names, p.Name)
		}
		t.Errorf("sorted %q: want ps by index, then workers (2 before 10), then heter, then the pod of no role", names)
	}
}
