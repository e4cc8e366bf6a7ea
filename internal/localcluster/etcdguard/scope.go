package etcdguard

import (
	"bytes"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// A pod reaches only its own job's keys. Paddle's launchers keep a job's
// rendezvous under two key prefixes named after its id (PADDLE_JOB_ID, which
// the operator sets to <namespace>_<name>_<uid>, PADDLE_ELASTIC_JOB_ID the
// same): /paddle/<id> (ETCDMaster.register_heartbeat's job_prefix, the
// legacy fleet.elastic manager's prefix) and /<id> (sync_peers'
// /<id>/info). No other job's id has a job's id as a prefix
// (operator/podcontract/elastic.go, ElasticJobID), so these two prefixes hold
// that job's keys and no other job's.

// Scope is what one caller may touch: the key prefixes of one job.
type Scope struct {
	// Job names the job, for messages: namespace/name.
	Job string
	// Prefixes are the key prefixes the job's keys begin with.
	Prefixes []string
}

// JobScope is the scope of the PaddleJob namespace/name of uid.
func JobScope(namespace, name, uid string) Scope {
	id := namespace + "_" + name + "_" + uid
	return Scope{Job: namespace + "/" + name, Prefixes: []string{"/paddle/" + id, "/" + id}}
}

// hostScope is a caller on the host that did not come through the cluster
// network's forward: it may read the key Ready reads, nothing else.
var hostScope = Scope{Job: "the host", Prefixes: []string{readyKey}}

// holds reports whether the range [key, rangeEnd) lies within one of the
// scope's prefixes. An empty rangeEnd is key alone; "\x00" is every key
// from key on, as etcd reads it.
func (s Scope) holds(key, rangeEnd []byte) bool {
	for _, p := range s.Prefixes {
		if !bytes.HasPrefix(key, []byte(p)) {
			continue
		}
		if len(rangeEnd) == 0 {
			return true
		}
		if end := prefixEnd([]byte(p)); !bytes.Equal(rangeEnd, []byte{0}) && bytes.Compare(rangeEnd, end) <= 0 {
			return true
		}
	}
	return false
}

// prefixEnd is the first key after every key beginning with p, as etcd's
// clients compute a prefix's range end.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0}
}

// outside is the error for a request that names keys outside the scope.
func (s Scope) outside(method string, key, rangeEnd []byte) error {
	what := fmt.Sprintf("key %q", key)
	if len(rangeEnd) > 0 {
		what = fmt.Sprintf("keys [%q, %q)", key, rangeEnd)
	}
	return status.Errorf(codes.PermissionDenied, "%s of %s is refused by the local cluster's elastic etcd guard: %s may use only the keys under %s",
		method, what, s.Job, strings.Join(s.Prefixes, " and "))
}

// checkRequest checks one request message of method against the scope:
// every key it names must be the scope's. Lease IDs are checked by the
// guard, which knows whose they are.
func (s Scope) checkRequest(method string, msg []byte) error {
	switch method {
	case "/etcdserverpb.KV/Range", "/etcdserverpb.KV/DeleteRange":
		return s.checkRange(method, msg)
	case "/etcdserverpb.KV/Put":
		key, _, err := keyAndRangeEnd(msg)
		if err != nil {
			return malformed(method, err)
		}
		if !s.holds(key, nil) {
			return s.outside(method, key, nil)
		}
		return nil
	case "/etcdserverpb.KV/Txn":
		return s.checkTxn(method, msg)
	case "/etcdserverpb.Watch/Watch":
		// WatchRequest: create_request = 1 (a WatchCreateRequest, whose key
		// and range_end are fields 1 and 2); cancels and progress requests
		// name no key.
		create, err := submessages(msg, 1)
		if err != nil {
			return malformed(method, err)
		}
		for _, c := range create {
			if err := s.checkRange(method, c); err != nil {
				return err
			}
		}
		return nil
	}
	return nil
}

// checkRange checks a message whose fields 1 and 2 are a key and a range
// end (RangeRequest, DeleteRangeRequest, WatchCreateRequest).
func (s Scope) checkRange(method string, msg []byte) error {
	key, end, err := keyAndRangeEnd(msg)
	if err != nil {
		return malformed(method, err)
	}
	if !s.holds(key, end) {
		return s.outside(method, key, end)
	}
	return nil
}

// checkTxn checks a TxnRequest: compare = 1 (Compare: key 3, range_end 64),
// success = 2 and failure = 3 (RequestOp: request_range 1, request_put 2,
// request_delete_range 3, request_txn 4).
func (s Scope) checkTxn(method string, msg []byte) error {
	compares, err := submessages(msg, 1)
	if err != nil {
		return malformed(method, err)
	}
	for _, c := range compares {
		key, _ := lastBytes(c, 3)
		end, _ := lastBytes(c, 64)
		if !s.holds(key, end) {
			return s.outside(method, key, end)
		}
	}
	ops, err := submessages(msg, 2, 3)
	if err != nil {
		return malformed(method, err)
	}
	for _, op := range ops {
		for _, nested := range []struct {
			field  protowire.Number
			method string
		}{{1, "/etcdserverpb.KV/Range"}, {2, "/etcdserverpb.KV/Put"}, {3, "/etcdserverpb.KV/DeleteRange"}, {4, "/etcdserverpb.KV/Txn"}} {
			reqs, err := submessages(op, nested.field)
			if err != nil {
				return malformed(method, err)
			}
			for _, r := range reqs {
				if err := s.checkRequest(nested.method, r); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func malformed(method string, err error) error {
	return status.Errorf(codes.InvalidArgument, "%s: the local cluster's elastic etcd guard cannot read the request: %v", method, err)
}

// keyAndRangeEnd are fields 1 and 2 of msg.
func keyAndRangeEnd(msg []byte) (key, rangeEnd []byte, err error) {
	if key, err = lastBytes(msg, 1); err != nil {
		return nil, nil, err
	}
	rangeEnd, err = lastBytes(msg, 2)
	return key, rangeEnd, err
}

// lastBytes is the last value of the length-delimited field n of msg, as
// protobuf reads a repeated scalar field: the last one wins.
func lastBytes(msg []byte, n protowire.Number) ([]byte, error) {
	vs, err := submessages(msg, n)
	if err != nil || len(vs) == 0 {
		return nil, err
	}
	return vs[len(vs)-1], nil
}

// submessages are the values of msg's length-delimited fields numbered
// ns, in order.
func submessages(msg []byte, ns ...protowire.Number) ([][]byte, error) {
	var out [][]byte
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		msg = msg[n:]
		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(msg)
			if m < 0 {
				return nil, protowire.ParseError(m)
			}
			for _, want := range ns {
				if num == want {
					out = append(out, v)
				}
			}
			msg = msg[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, msg)
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		msg = msg[m:]
	}
	return out, nil
}

// lastVarint is the last value of the varint field n of msg (0 when
// absent): a lease ID.
func lastVarint(msg []byte, n protowire.Number) (uint64, error) {
	var v uint64
	for len(msg) > 0 {
		num, typ, k := protowire.ConsumeTag(msg)
		if k < 0 {
			return 0, protowire.ParseError(k)
		}
		msg = msg[k:]
		if typ == protowire.VarintType && num == n {
			x, m := protowire.ConsumeVarint(msg)
			if m < 0 {
				return 0, protowire.ParseError(m)
			}
			v, msg = x, msg[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, msg)
		if m < 0 {
			return 0, protowire.ParseError(m)
		}
		msg = msg[m:]
	}
	return v, nil
}
