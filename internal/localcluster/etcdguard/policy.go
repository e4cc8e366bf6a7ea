// Package etcdguard is the gRPC front of the local cluster's elastic etcd.
// Pods reach it without credentials, as Paddle's elastic launcher dials
// etcd with python-etcd3 and no TLS; it forwards the key-value, watch and
// lease calls that launcher makes to the real etcd, which listens where no
// pod can reach it, and refuses every other call — membership, maintenance,
// authentication — with PermissionDenied, before it reaches etcd. It keeps
// each pod to its own job's keys and leases (scope.go), telling jobs by the
// pod at the address the cluster network's forward names (identity.go,
// clientaddr.go).
package etcdguard

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Allowed are the gRPC methods the guard forwards. Paddle 3.0.0's launcher
// (launch/controllers/master.py, launch/utils/etcd_client.py) and elastic
// manager (fleet/elastic/manager.py) call python-etcd3's put, get,
// get_prefix, delete, delete_prefix, lease, Lease.refresh,
// add_watch[_prefix]_callback and cancel_watch, which python-etcd3 0.12
// maps to KV.Put, KV.Range, KV.DeleteRange, Lease.LeaseGrant,
// Lease.LeaseKeepAlive and the Watch stream (a cancel is a message on it).
// KV.Txn, Lease.LeaseRevoke and Lease.LeaseTimeToLive are python-etcd3's
// other per-key calls (replace, lock, Lease.revoke, Lease.remaining_ttl):
// they touch keys and leases no more than Put and DeleteRange do. No
// read-only cluster call (Maintenance.Status, Cluster.MemberList) is needed:
// neither Paddle nor python-etcd3's constructor makes one.
var Allowed = map[string]bool{
	"/etcdserverpb.KV/Range":              true,
	"/etcdserverpb.KV/Put":                true,
	"/etcdserverpb.KV/DeleteRange":        true,
	"/etcdserverpb.KV/Txn":                true,
	"/etcdserverpb.Watch/Watch":           true,
	"/etcdserverpb.Lease/LeaseGrant":      true,
	"/etcdserverpb.Lease/LeaseRevoke":     true,
	"/etcdserverpb.Lease/LeaseKeepAlive":  true,
	"/etcdserverpb.Lease/LeaseTimeToLive": true,
}

// refusals say why a service, or a method, is not a pod's to call; the most
// specific prefix of the method's name wins.
var refusals = []struct{ prefix, why string }{
	{"/etcdserverpb.KV/Compact", "compaction drops the history every job's watches resume from"},
	{"/etcdserverpb.Lease/", "only granting, refreshing, revoking and reading a lease are a job's"},
	{"/etcdserverpb.Cluster/", "membership is the cluster's: a pod that adds or removes a member can break etcd's quorum"},
	{"/etcdserverpb.Maintenance/", "maintenance (snapshot, defragment, alarms, leader moves, downgrades, hashes) acts on the whole etcd and reads or stalls every job's keys"},
	{"/etcdserverpb.Auth/", "enabling authentication or managing users and roles would lock every job out"},
}

// Refusal is the error the guard answers a method it does not forward with,
// nil for an allowed one.
func Refusal(method string) error {
	if Allowed[method] {
		return nil
	}
	why := "the elastic etcd serves Paddle's elastic rendezvous: only its key-value, watch and lease calls"
	for _, r := range refusals {
		if strings.HasPrefix(method, r.prefix) {
			why = r.why
			break
		}
	}
	return status.Errorf(codes.PermissionDenied, "%s is refused by the local cluster's elastic etcd guard: %s", method, why)
}
