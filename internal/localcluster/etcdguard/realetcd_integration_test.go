//go:build integration

package etcdguard

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
)

// The guard in front of a real etcd, as the local cluster runs it: etcd
// serves clients on a Unix socket only, the guard on a loopback port. The
// calls of Paddle's elastic rendezvous work through the guard; membership,
// snapshots, authentication and leader moves are refused and change
// nothing, as etcd itself, asked on its socket, tells.
func TestGuardInFrontOfARealEtcd(t *testing.T) {
	etcdSocket := startRealEtcd(t)
	direct, err := Dial("unix://" + etcdSocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	membersBefore := fieldBytes(t, call(t, direct, "/etcdserverpb.Cluster/MemberList", nil), 2)

	backend, err := Dial("unix://" + etcdSocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(backend, fakeIdentities{podOfA: jobA}, io.Discard)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	if err := Ready(context.Background(), lis.Addr().String()); err != nil {
		t.Fatalf("Ready through the guard: %v", err)
	}
	// A pod of job A, through the forward.
	guard := dialAs(t, lis.Addr().String(), podOfA)

	t.Run("Paddle's calls pass", func(t *testing.T) { rendezvousCalls(t, guard) })
	t.Run("cluster-wide calls are refused", func(t *testing.T) {
		for _, c := range []struct {
			method string
			req    []byte
		}{
			// A learner: etcd itself takes one, where it refuses a voter
			// its single started member could not reach quorum with.
			{"/etcdserverpb.Cluster/MemberAdd", append(bytesField(1, []byte("https://127.0.0.1:1")), varintField(2, 1)...)},
			{"/etcdserverpb.Maintenance/Snapshot", nil},
			{"/etcdserverpb.Auth/UserAdd", append(bytesField(1, []byte("root")), bytesField(2, []byte("pw"))...)},
			{"/etcdserverpb.Auth/AuthEnable", nil},
			{"/etcdserverpb.Maintenance/MoveLeader", varintField(1, 1)},
		} {
			err := stream(guard, c.method, c.req)
			if st := status.Convert(err); st.Code() != codes.PermissionDenied {
				t.Errorf("%s through the guard ended %v, want PermissionDenied", c.method, err)
			}
		}
	})
	membersAfter := fieldBytes(t, call(t, direct, "/etcdserverpb.Cluster/MemberList", nil), 2)
	if len(membersAfter) != 1 || !bytes.Equal(membersAfter[0], membersBefore[0]) {
		t.Errorf("etcd's members changed: %d before, %d after", len(membersBefore), len(membersAfter))
	}
	if enabled := fieldVarints(t, call(t, direct, "/etcdserverpb.Auth/AuthStatus", nil), 2); len(enabled) > 0 && enabled[0] != 0 {
		t.Error("etcd's authentication is enabled")
	}
	call(t, guard, "/etcdserverpb.KV/Put", append(bytesField(1, []byte(jobA.Prefixes[0]+"/after")), bytesField(2, []byte("still open"))...))
}

// rendezvousCalls makes, through conn, the calls Paddle's elastic launcher
// makes: Put, Range, a prefix Watch that sees a Put, a lease granted, a key
// put with it, and the lease kept alive.
func rendezvousCalls(t *testing.T, conn *grpc.ClientConn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	watch, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/etcdserverpb.Watch/Watch")
	if err != nil {
		t.Fatal(err)
	}
	// WatchRequest{create_request: {key: job + "/", range_end: job + "0"}}.
	job := jobA.Prefixes[0]
	create := append(bytesField(1, []byte(job+"/")), bytesField(2, []byte(job+"0"))...)
	if err := watch.SendMsg(&frame{data: bytesField(1, create)}); err != nil {
		t.Fatal(err)
	}
	created := recv(t, watch)
	if v := fieldVarints(t, created, 3); len(v) != 1 || v[0] != 1 {
		t.Fatalf("the watch was not created: %x", created)
	}

	call(t, conn, "/etcdserverpb.KV/Put", append(bytesField(1, []byte(job+"/rank0")), bytesField(2, []byte("10.0.0.1"))...))
	kvs := fieldBytes(t, call(t, conn, "/etcdserverpb.KV/Range", bytesField(1, []byte(job+"/rank0"))), 2)
	if len(kvs) != 1 || !bytes.Contains(kvs[0], []byte("10.0.0.1")) {
		t.Errorf("Range of job/rank0 through the guard: %q, want the value put", kvs)
	}
	if event := recv(t, watch); !bytes.Contains(event, []byte("10.0.0.1")) {
		t.Errorf("the watch reported %x, want the put of job/rank0", event)
	}

	granted := call(t, conn, "/etcdserverpb.Lease/LeaseGrant", varintField(1, 30))
	ids := fieldVarints(t, granted, 2)
	if len(ids) != 1 || ids[0] == 0 {
		t.Fatalf("LeaseGrant through the guard gave no lease: %x", granted)
	}
	call(t, conn, "/etcdserverpb.KV/Put", append(append(bytesField(1, []byte(job+"/beat")), bytesField(2, []byte("pod-0"))...), varintField(3, ids[0])...))
	keepAlive, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/etcdserverpb.Lease/LeaseKeepAlive")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := keepAlive.SendMsg(&frame{data: varintField(1, ids[0])}); err != nil {
			t.Fatal(err)
		}
		if ttl := fieldVarints(t, recv(t, keepAlive), 3); len(ttl) != 1 || ttl[0] == 0 {
			t.Errorf("keep-alive %d through the guard: TTL %v, want the lease alive", i, ttl)
		}
	}
}

// startRealEtcd runs the envtest assets' etcd serving clients on a Unix
// socket only, and returns the socket once etcd answers on it.
func startRealEtcd(t *testing.T) string {
	t.Helper()
	bins, err := kubebin.Ensure(context.Background(), kubebin.Options{
		Dirs: []string{os.Getenv("KUBEBUILDER_ASSETS"), os.Getenv("PADDLEJOB_BINARIES")}, Log: os.Stderr,
	}, kubebin.Etcd)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	socket := filepath.Join(dir, "etcd.sock")
	peerLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peer := "http://" + peerLis.Addr().String()
	peerLis.Close()
	cmd := exec.Command(filepath.Join(bins, "etcd"), "--name=guarded", "--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls=unix://"+socket, "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer, "--initial-cluster=guarded="+peer,
		"--listen-metrics-urls=", "--unsafe-no-fsync", "--log-level=warn")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	conn, err := Dial("unix://" + socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A call that waits for the socket, then for etcd to serve.
	if err := conn.Invoke(ctx, "/etcdserverpb.KV/Range", &frame{data: bytesField(1, []byte("x"))}, &frame{}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("etcd did not answer on %s: %v\n%s", socket, err, log.String())
	}
	return socket
}

// call makes a unary call and fails the test unless it succeeds.
func call(t *testing.T, conn *grpc.ClientConn, method string, req []byte) []byte {
	t.Helper()
	out := &frame{}
	if err := conn.Invoke(context.Background(), method, &frame{data: req}, out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out.data
}

// stream makes a call as a stream (Snapshot streams its answer) and returns
// how it ended.
func stream(conn *grpc.ClientConn, method string, req []byte) error {
	s, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	if err := s.SendMsg(&frame{data: req}); err != nil {
		return s.RecvMsg(&frame{})
	}
	_ = s.CloseSend()
	return s.RecvMsg(&frame{})
}

func recv(t *testing.T, s grpc.ClientStream) []byte {
	t.Helper()
	f := &frame{}
	if err := s.RecvMsg(f); err != nil {
		t.Fatal(err)
	}
	return f.data
}

func bytesField(n protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, n, protowire.BytesType), v)
}

func varintField(n protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, n, protowire.VarintType), v)
}

// fields walks a message's top-level fields.
func fields(t *testing.T, msg []byte, visit func(protowire.Number, protowire.Type, []byte, uint64)) {
	t.Helper()
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			t.Fatalf("malformed message %x", msg)
		}
		msg = msg[l:]
		var v []byte
		var u uint64
		switch typ {
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(msg)
		case protowire.VarintType:
			u, l = protowire.ConsumeVarint(msg)
		default:
			l = protowire.ConsumeFieldValue(n, typ, msg)
		}
		if l < 0 {
			t.Fatal(fmt.Errorf("malformed field %d: %w", n, protowire.ParseError(l)))
		}
		msg = msg[l:]
		visit(n, typ, v, u)
	}
}

func fieldBytes(t *testing.T, msg []byte, want protowire.Number) [][]byte {
	var out [][]byte
	fields(t, msg, func(n protowire.Number, typ protowire.Type, v []byte, _ uint64) {
		if n == want && typ == protowire.BytesType {
			out = append(out, v)
		}
	})
	return out
}

func fieldVarints(t *testing.T, msg []byte, want protowire.Number) []uint64 {
	var out []uint64
	fields(t, msg, func(n protowire.Number, typ protowire.Type, _ []byte, u uint64) {
		if n == want && typ == protowire.VarintType {
			out = append(out, u)
		}
	})
	return out
}
