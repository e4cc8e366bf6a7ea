package etcdguard

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// What Paddle's elastic rendezvous calls passes; every refusal says why in
// terms of what the call would do to the other jobs.
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		method string
		why    string // "" for an allowed method
	}{
		{"/etcdserverpb.KV/Put", ""},
		{"/etcdserverpb.KV/Range", ""},
		{"/etcdserverpb.KV/DeleteRange", ""},
		{"/etcdserverpb.Watch/Watch", ""},
		{"/etcdserverpb.Lease/LeaseGrant", ""},
		{"/etcdserverpb.Lease/LeaseKeepAlive", ""},
		{"/etcdserverpb.KV/Compact", "history every job's watches resume from"},
		{"/etcdserverpb.Lease/LeaseLeases", "only granting, refreshing, revoking and reading a lease"},
		{"/etcdserverpb.Cluster/MemberAdd", "break etcd's quorum"},
		{"/etcdserverpb.Maintenance/Snapshot", "acts on the whole etcd"},
		{"/etcdserverpb.Auth/AuthEnable", "lock every job out"},
		{"/grpc.health.v1.Health/Check", "only its key-value, watch and lease calls"},
	} {
		err := Refusal(tc.method)
		if tc.why == "" {
			if err != nil {
				t.Errorf("%s refused (%v), want it forwarded: Paddle's elastic launcher calls it", tc.method, err)
			}
			continue
		}
		st := status.Convert(err)
		if st.Code() != codes.PermissionDenied || !strings.Contains(st.Message(), tc.method) || !strings.Contains(st.Message(), tc.why) {
			t.Errorf("%s: %v, want PermissionDenied naming it and saying %q", tc.method, err, tc.why)
		}
	}
}
