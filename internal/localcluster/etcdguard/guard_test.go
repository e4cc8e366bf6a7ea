package etcdguard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// fakeEtcd is an in-process gRPC server standing in for etcd: it records
// every call that reaches it and answers by method.
type fakeEtcd struct {
	mu      sync.Mutex
	reached []string
	// watchEnded receives the context error of each Watch when it ends.
	watchEnded chan error
}

func (f *fakeEtcd) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reached)
}

func (f *fakeEtcd) handle(_ any, s grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(s)
	f.mu.Lock()
	f.reached = append(f.reached, method)
	f.mu.Unlock()
	md, _ := metadata.FromIncomingContext(s.Context())
	switch method {
	case "/etcdserverpb.KV/Put":
		// Echo the request, with the caller's token in a header and a trailer.
		in := &frame{}
		if err := s.RecvMsg(in); err != nil {
			return err
		}
		if err := s.SendHeader(metadata.Pairs("token-seen", strings.Join(md.Get("token"), ","))); err != nil {
			return err
		}
		s.SetTrailer(metadata.Pairs("etcd-trailer", "put"))
		return s.SendMsg(&frame{data: append([]byte("put:"), in.data...)})
	case "/etcdserverpb.Watch/Watch":
		// Two events per request until the caller closes its side, then a
		// status of etcd's choosing.
		for {
			in := &frame{}
			if err := s.RecvMsg(in); err != nil {
				f.watchEnded <- s.Context().Err()
				if errors.Is(err, io.EOF) {
					return status.Error(codes.OutOfRange, "watch ended by the fake etcd")
				}
				return err
			}
			for _, ev := range []string{"a:", "b:"} {
				if err := s.SendMsg(&frame{data: append([]byte(ev), in.data...)}); err != nil {
					return err
				}
			}
		}
	case "/etcdserverpb.KV/Range":
		return status.Error(codes.NotFound, "etcdserver: no such key, says the fake etcd")
	case "/etcdserverpb.KV/DeleteRange", "/etcdserverpb.KV/Txn", "/etcdserverpb.Lease/LeaseRevoke", "/etcdserverpb.Lease/LeaseTimeToLive":
		if err := s.RecvMsg(&frame{}); err != nil {
			return err
		}
		return s.SendMsg(&frame{})
	case "/etcdserverpb.Lease/LeaseGrant":
		// LeaseGrantResponse{ID: 7 + the calls so far}.
		if err := s.RecvMsg(&frame{}); err != nil {
			return err
		}
		f.mu.Lock()
		id := uint64(7 + len(f.reached))
		f.mu.Unlock()
		return s.SendMsg(&frame{data: protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), id)})
	}
	return status.Errorf(codes.Unimplemented, "the fake etcd does not serve %s", method)
}

// The callers of the tests: pods of two jobs, a pod of none, and a node IP
// that hostNetwork pods of two jobs share.
var (
	jobA      = JobScope("team-a", "train", "11111111-1111-1111-1111-111111111111")
	jobB      = JobScope("team-b", "train", "22222222-2222-2222-2222-222222222222")
	podOfA    = netip.MustParseAddr("10.244.0.100")
	podOfB    = netip.MustParseAddr("10.244.0.101")
	podOfNone = netip.MustParseAddr("10.244.0.102")
)

// fakeIdentities are the scopes of fixed addresses.
type fakeIdentities map[netip.Addr]Scope

func (f fakeIdentities) ScopeOf(_ context.Context, ip netip.Addr) (Scope, error) {
	s, ok := f[ip]
	if !ok {
		return Scope{}, errors.New("no pod of a PaddleJob has the address " + ip.String())
	}
	return s, nil
}

// startGuard runs a fake etcd and a guard in front of it, and returns a
// connection to the guard as a pod of jobA, through the forward, and the
// fake.
func startGuard(t *testing.T) (*grpc.ClientConn, *fakeEtcd) {
	t.Helper()
	addr, fake := startGuardAt(t)
	return dialAs(t, addr, podOfA), fake
}

// dialAs connects to the guard at addr as the forward does for a client
// at ip: a PROXY line first. An invalid ip connects as the host does.
func dialAs(t *testing.T, addr string, ip netip.Addr) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", a)
			if err != nil || !ip.IsValid() {
				return c, err
			}
			if _, err := io.WriteString(c, "PROXY TCP4 "+ip.String()+" 172.18.0.1 51000 40002\r\n"); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// startGuardAt runs a fake etcd and a guard in front of it, and returns
// the guard's address and the fake.
func startGuardAt(t *testing.T) (string, *fakeEtcd) {
	t.Helper()
	fake := &fakeEtcd{watchEnded: make(chan error, 4)}
	etcdSocket := t.TempDir() + "/etcd.sock"
	etcdLis, err := net.Listen("unix", etcdSocket)
	if err != nil {
		t.Fatal(err)
	}
	etcd := grpc.NewServer(grpc.UnknownServiceHandler(fake.handle), grpc.ForceServerCodec(rawCodec{}))
	go func() { _ = etcd.Serve(etcdLis) }()
	t.Cleanup(etcd.Stop)

	backend, err := Dial("unix://" + etcdSocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	guardLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	guard := NewServer(backend, fakeIdentities{podOfA: jobA, podOfB: jobB}, io.Discard)
	go func() { _ = guard.Serve(guardLis) }()
	t.Cleanup(guard.Stop)
	return guardLis.Addr().String(), fake
}

// A unary call reaches etcd with the caller's metadata, and the caller gets
// etcd's answer, headers and trailers unchanged.
func TestGuardForwardsAUnaryCall(t *testing.T) {
	conn, fake := startGuard(t)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "token", "t0ken")
	var header, trailer metadata.MD
	out := &frame{}
	put := keyRequest(jobA.Prefixes[0]+"/k", "", "v")
	err := conn.Invoke(ctx, "/etcdserverpb.KV/Put", &frame{data: put}, out,
		grpc.Header(&header), grpc.Trailer(&trailer))
	if err != nil {
		t.Fatalf("Put through the guard: %v", err)
	}
	if want := append([]byte("put:"), put...); !bytes.Equal(out.data, want) {
		t.Errorf("Put answered %q, want etcd's %q byte for byte", out.data, want)
	}
	if got := header.Get("token-seen"); len(got) != 1 || got[0] != "t0ken" {
		t.Errorf("etcd saw token %q, want the caller's t0ken (header %v)", got, header)
	}
	if got := trailer.Get("etcd-trailer"); len(got) != 1 || got[0] != "put" {
		t.Errorf("trailer %v, want etcd's etcd-trailer: put", trailer)
	}
	if got := fake.calls(); !slices.Equal(got, []string{"/etcdserverpb.KV/Put"}) {
		t.Errorf("etcd was called %v, want the one Put", got)
	}
}

// etcd's errors reach the caller with their code and message.
func TestGuardPassesEtcdsStatusBack(t *testing.T) {
	conn, _ := startGuard(t)
	err := conn.Invoke(context.Background(), "/etcdserverpb.KV/Range", &frame{data: keyRequest(jobA.Prefixes[1]+"/info/0", "", "")}, &frame{})
	if st := status.Convert(err); st.Code() != codes.NotFound || st.Message() != "etcdserver: no such key, says the fake etcd" {
		t.Errorf("Range ended %v, want etcd's NotFound and message", err)
	}
}

// A bidirectional stream carries every frame both ways, and ends with
// etcd's status once the caller closes its side.
func TestGuardStreamsBothWays(t *testing.T) {
	conn, fake := startGuard(t)
	s, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/etcdserverpb.Watch/Watch")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, req := range []string{"w1", "w2", "w3"} {
		if err := s.SendMsg(&frame{data: watchCreate(jobA.Prefixes[0] + "/" + req)}); err != nil {
			t.Fatalf("sending %s: %v", req, err)
		}
		for range 2 {
			f := &frame{}
			if err := s.RecvMsg(f); err != nil {
				t.Fatalf("receiving after %s: %v", req, err)
			}
			got = append(got, string(f.data))
		}
	}
	var want []string
	for _, req := range []string{"w1", "w2", "w3"} {
		for _, ev := range []string{"a:", "b:"} {
			want = append(want, ev+string(watchCreate(jobA.Prefixes[0]+"/"+req)))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the watch streamed %v, want %v", got, want)
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	err = s.RecvMsg(&frame{})
	if st := status.Convert(err); st.Code() != codes.OutOfRange || st.Message() != "watch ended by the fake etcd" {
		t.Errorf("the watch ended %v, want etcd's OutOfRange", err)
	}
	if ctxErr := <-fake.watchEnded; ctxErr != nil {
		t.Errorf("etcd's side of the watch was cancelled (%v), want it closed by the caller", ctxErr)
	}
}

// A caller that goes away mid-stream ends etcd's side of the call too.
func TestGuardCancelsEtcdsSideWhenTheCallerLeaves(t *testing.T) {
	conn, fake := startGuard(t)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/etcdserverpb.Watch/Watch")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendMsg(&frame{data: watchCreate(jobA.Prefixes[0])}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecvMsg(&frame{}); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case ctxErr := <-fake.watchEnded:
		if ctxErr == nil {
			t.Errorf("etcd's side ended without being cancelled")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("etcd's side of the watch still runs 30s after its caller left")
	}
}

// Every method outside Paddle's rendezvous is refused with PermissionDenied
// naming it, and never reaches etcd.
func TestGuardRefusesWhatIsNotAJobs(t *testing.T) {
	conn, fake := startGuard(t)
	for _, method := range []string{
		"/etcdserverpb.Cluster/MemberAdd", "/etcdserverpb.Cluster/MemberRemove", "/etcdserverpb.Cluster/MemberList",
		"/etcdserverpb.Maintenance/Snapshot", "/etcdserverpb.Maintenance/Defragment", "/etcdserverpb.Maintenance/MoveLeader",
		"/etcdserverpb.Maintenance/Alarm", "/etcdserverpb.Maintenance/Downgrade", "/etcdserverpb.Maintenance/Status",
		"/etcdserverpb.Auth/AuthEnable", "/etcdserverpb.Auth/UserAdd",
		"/etcdserverpb.KV/Compact", "/etcdserverpb.Lease/LeaseLeases",
		"/grpc.health.v1.Health/Check", "/v3electionpb.Election/Campaign",
	} {
		// Snapshot streams its answer: call every method as a stream.
		s, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
		if err == nil {
			_ = s.SendMsg(&frame{})
			_ = s.CloseSend()
			err = s.RecvMsg(&frame{})
		}
		st := status.Convert(err)
		if st.Code() != codes.PermissionDenied || !strings.Contains(st.Message(), method) {
			t.Errorf("%s ended %v, want PermissionDenied naming the method", method, err)
		}
	}
	if got := fake.calls(); len(got) != 0 {
		t.Errorf("refused calls reached etcd: %v", got)
	}
}
