package etcdguard

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// keyRequest is a RangeRequest, DeleteRangeRequest or PutRequest: key = 1,
// range_end = 2 (value = 2 for a Put: pass it as value, not rangeEnd).
func keyRequest(key, rangeEnd, value string) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, key)
	if rangeEnd != "" {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, rangeEnd)
	}
	if value != "" {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, value)
	}
	return b
}

// watchCreate is a WatchRequest creating a watch of prefix.
func watchCreate(prefix string) []byte {
	create := keyRequest(prefix, string(prefixEnd([]byte(prefix))), "")
	return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), create)
}

// txn is a TxnRequest comparing compareKey's version and running ops
// (field, request) on success.
func txn(compareKey string, ops ...[]byte) []byte {
	cmp := protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), compareKey)
	b := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), cmp)
	for _, op := range ops {
		b = protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), op)
	}
	return b
}

// requestOp is a RequestOp holding req in field (1 range, 2 put, 3 delete).
func requestOp(field protowire.Number, req []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, field, protowire.BytesType), req)
}

// leaseID is a request naming lease id in field 1.
func leaseID(id uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), id)
}

func TestScopeHolds(t *testing.T) {
	a := jobA.Prefixes[0] // /paddle/team-a_train_1111…
	info := jobA.Prefixes[1]
	for _, tc := range []struct {
		name, key, rangeEnd string
		want                bool
	}{
		{"the job's prefix itself (the legacy manager's status key)", a, "", true},
		{"a heartbeat", a + "/heartbeat/pod-0", "", true},
		{"the whole job prefix (the launcher's delete_prefix)", a, string(prefixEnd([]byte(a))), true},
		{"sync_peers' info prefix", info + "/info", string(prefixEnd([]byte(info + "/info"))), true},
		{"a narrower range", a + "/a", a + "/b", true},
		{"another job's key", jobB.Prefixes[0] + "/heartbeat/x", "", false},
		{"every job's keys", "/paddle/", string(prefixEnd([]byte("/paddle/"))), false},
		{"from the job's key to the end of the keyspace", a, "\x00", false},
		{"a range running past the job's prefix", a, "/paddle/zzz", false},
		{"the empty key", "", "", false},
		{"a key of a job whose id the job's is a prefix of", "/paddle/team-a_train", "", false},
	} {
		if got := jobA.holds([]byte(tc.key), []byte(tc.rangeEnd)); got != tc.want {
			t.Errorf("%s: holds(%q, %q) = %v, want %v", tc.name, tc.key, tc.rangeEnd, got, tc.want)
		}
	}
}

func TestScopeChecksEveryKeyOfARequest(t *testing.T) {
	own, other := jobA.Prefixes[0]+"/k", jobB.Prefixes[0]+"/k"
	for _, tc := range []struct {
		name, method string
		msg          []byte
		allowed      bool
	}{
		{"Range of its key", "/etcdserverpb.KV/Range", keyRequest(own, "", ""), true},
		{"Range of another job's key", "/etcdserverpb.KV/Range", keyRequest(other, "", ""), false},
		{"Range of every key", "/etcdserverpb.KV/Range", keyRequest("\x00", "\x00", ""), false},
		{"Put of its key", "/etcdserverpb.KV/Put", keyRequest(own, "", "v"), true},
		{"Put of another job's key", "/etcdserverpb.KV/Put", keyRequest(other, "", "v"), false},
		{"DeleteRange of another job's prefix", "/etcdserverpb.KV/DeleteRange", keyRequest(jobB.Prefixes[0], string(prefixEnd([]byte(jobB.Prefixes[0]))), ""), false},
		{"Watch of its prefix", "/etcdserverpb.Watch/Watch", watchCreate(jobA.Prefixes[0]), true},
		{"Watch of another job's prefix", "/etcdserverpb.Watch/Watch", watchCreate(jobB.Prefixes[0]), false},
		{"Watch of everything", "/etcdserverpb.Watch/Watch", watchCreate("/"), false},
		{"Txn on its keys", "/etcdserverpb.KV/Txn", txn(own, requestOp(2, keyRequest(own, "", "v"))), true},
		{"Txn comparing another job's key", "/etcdserverpb.KV/Txn", txn(other, requestOp(2, keyRequest(own, "", "v"))), false},
		{"Txn deleting another job's key", "/etcdserverpb.KV/Txn", txn(own, requestOp(3, keyRequest(other, "", ""))), false},
		{"Txn nesting a Txn that reads another job's key", "/etcdserverpb.KV/Txn",
			txn(own, requestOp(4, txn(own, requestOp(1, keyRequest(other, "", ""))))), false},
		{"a message that is no protobuf", "/etcdserverpb.KV/Range", []byte{0xff}, false},
	} {
		err := jobA.checkRequest(tc.method, tc.msg)
		if (err == nil) != tc.allowed {
			t.Errorf("%s: %v, want allowed %v", tc.name, err, tc.allowed)
		}
		if err != nil && !tc.allowed && status.Code(err) == codes.PermissionDenied && !strings.Contains(status.Convert(err).Message(), jobA.Job) {
			t.Errorf("%s: %v, want the refusal to name the job %s", tc.name, err, jobA.Job)
		}
	}
}

func TestScopeOfPods(t *testing.T) {
	jobPod := func(ns, job, uid string, phase corev1.PodPhase) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job + "-worker-0"}, Status: corev1.PodStatus{Phase: phase}}
		if job != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: paddleJobAPIVersion, Kind: "PaddleJob", Name: job, UID: types.UID(uid), Controller: ptrTrue()}}
		} else {
			p.Name = "plain"
		}
		return p
	}
	a := jobPod("team-a", "train", "11111111-1111-1111-1111-111111111111", corev1.PodRunning)
	b := jobPod("team-b", "train", "22222222-2222-2222-2222-222222222222", corev1.PodRunning)
	done := jobPod("team-b", "old", "33333333-3333-3333-3333-333333333333", corev1.PodSucceeded)
	plain := jobPod("team-a", "", "", corev1.PodRunning)
	ip := netip.MustParseAddr("10.244.0.100")
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want *Scope
	}{
		{"a pod of a job", []*corev1.Pod{a}, &jobA},
		{"a pod of a job where a finished pod had the address", []*corev1.Pod{done, a}, &jobA},
		{"no pod", nil, nil},
		{"a pod of no job", []*corev1.Pod{plain}, nil},
		{"a node IP of two jobs' hostNetwork pods", []*corev1.Pod{a, b}, nil},
		{"a node IP of a job's pod and a plain hostNetwork pod", []*corev1.Pod{a, plain}, nil},
		{"a pod whose controller is of another kind", []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "y",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "u", Controller: ptrTrue()}}}}}, nil},
	} {
		got, err := scopeOfPods(ip, tc.pods)
		switch {
		case tc.want == nil && err == nil:
			t.Errorf("%s: scope %v, want none", tc.name, got)
		case tc.want != nil && (err != nil || got.Job != tc.want.Job || !slices.Equal(got.Prefixes, tc.want.Prefixes)):
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, *tc.want)
		}
	}
}

func ptrTrue() *bool { b := true; return &b }

// A pod of job A reaches its own keys through the guard, and none of job
// B's: reading, deleting, writing, watching or a transaction; a pod of no
// job and a host connection get nothing but what is theirs.
func TestGuardKeepsEachPodToItsJobsKeys(t *testing.T) {
	addr, fake := startGuardAt(t)
	a := dialAs(t, addr, podOfA)
	call := func(conn *grpc.ClientConn, method string, msg []byte) (*frame, error) {
		out := &frame{}
		return out, conn.Invoke(context.Background(), method, &frame{data: msg}, out)
	}
	for _, tc := range []struct {
		method string
		msg    []byte
	}{
		{"/etcdserverpb.KV/Range", keyRequest(jobB.Prefixes[0], string(prefixEnd([]byte(jobB.Prefixes[0]))), "")},
		{"/etcdserverpb.KV/Range", keyRequest("/paddle/", string(prefixEnd([]byte("/paddle/"))), "")},
		{"/etcdserverpb.KV/DeleteRange", keyRequest(jobB.Prefixes[0], string(prefixEnd([]byte(jobB.Prefixes[0]))), "")},
		{"/etcdserverpb.KV/Put", keyRequest(jobB.Prefixes[0]+"/heartbeat/x", "", "forged")},
		{"/etcdserverpb.KV/Txn", txn(jobA.Prefixes[0], requestOp(3, keyRequest(jobB.Prefixes[1], "", "")))},
	} {
		_, err := call(a, tc.method, tc.msg)
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("job A's pod calling %s on job B's keys: %v, want PermissionDenied", tc.method, err)
		}
	}
	w, err := a.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/etcdserverpb.Watch/Watch")
	if err != nil {
		t.Fatal(err)
	}
	_ = w.SendMsg(&frame{data: watchCreate(jobB.Prefixes[0])})
	if err := w.RecvMsg(&frame{}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("job A's pod watching job B's keys: %v, want PermissionDenied", err)
	}
	if got := fake.calls(); len(got) != 0 {
		t.Errorf("refused calls reached etcd: %v", got)
	}

	// Its own keys, and its leases only.
	if _, err := call(a, "/etcdserverpb.KV/DeleteRange", keyRequest(jobA.Prefixes[0], string(prefixEnd([]byte(jobA.Prefixes[0]))), "")); err != nil {
		t.Errorf("job A's pod deleting its job's keys: %v", err)
	}
	granted, err := call(a, "/etcdserverpb.Lease/LeaseGrant", protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 10))
	if err != nil {
		t.Fatalf("job A's pod granting a lease: %v", err)
	}
	id, _ := lastVarint(granted.data, 2)
	b := dialAs(t, addr, podOfB)
	for _, method := range []string{"/etcdserverpb.Lease/LeaseTimeToLive", "/etcdserverpb.Lease/LeaseRevoke"} {
		if _, err := call(b, method, leaseID(id)); status.Code(err) != codes.PermissionDenied {
			t.Errorf("job B's pod calling %s on job A's lease %d: %v, want PermissionDenied", method, id, err)
		}
		if _, err := call(a, method, leaseID(id)); err != nil {
			t.Errorf("job A's pod calling %s on its lease %d: %v", method, id, err)
		}
	}

	none := dialAs(t, addr, podOfNone)
	if _, err := call(none, "/etcdserverpb.KV/Range", keyRequest(jobA.Prefixes[0], "", "")); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a pod of no job reading job A's key: %v, want PermissionDenied", err)
	}
	host := dialAs(t, addr, netip.Addr{})
	if _, err := call(host, "/etcdserverpb.KV/Range", keyRequest(jobA.Prefixes[0], "", "")); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a host connection reading job A's key: %v, want PermissionDenied", err)
	}
	if _, err := call(host, "/etcdserverpb.KV/Range", keyRequest(readyKey, "", "")); status.Code(err) != codes.NotFound {
		t.Errorf("a host connection reading the ready key: %v, want etcd's answer (the fake's NotFound)", err)
	}
}

// PodIdentities find a caller's job among the API server's pods by the
// caller's address.
func TestPodIdentitiesFindTheJobOfAnAddress(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train-worker-0", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: paddleJobAPIVersion, Kind: "PaddleJob", Name: "train", UID: "11111111-1111-1111-1111-111111111111", Controller: ptrTrue()}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: podOfA.String()},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids, err := NewPodIdentities(ctx, fake.NewClientset(pod))
	if err != nil {
		t.Fatal(err)
	}
	ids.lag = 200 * time.Millisecond
	got, err := ids.ScopeOf(ctx, podOfA)
	if err != nil || got.Job != jobA.Job || !slices.Equal(got.Prefixes, jobA.Prefixes) {
		t.Errorf("ScopeOf(%s) = %v, %v; want %v", podOfA, got, err, jobA)
	}
	if got, err := ids.ScopeOf(ctx, podOfB); err == nil {
		t.Errorf("ScopeOf(%s), an address no pod has: %v, want an error", podOfB, got)
	}
}
