package etcdguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// frame is one gRPC message, kept as the bytes it came in: the guard never
// decodes etcd's messages, so it needs none of etcd's types.
type frame struct{ data []byte }

// rawCodec passes frames through unchanged. Its name is "proto", so the
// content type both sides see is the one etcd and python-etcd3 use.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("etcdguard: cannot marshal %T", v)
	}
	return f.data, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("etcdguard: cannot unmarshal into %T", v)
	}
	// grpc reuses its buffer after Unmarshal returns.
	f.data = append(f.data[:0], data...)
	return nil
}

// Dial connects to the etcd at target (a gRPC target such as
// unix:///path/to/socket), lazily and reconnecting: a call made while etcd
// is down fails at once with Unavailable, as it would against etcd itself,
// and Paddle's launcher retries it (its ETCDClient retries every call).
func Dial(target string) (*grpc.ClientConn, error) {
	return grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32), grpc.ForceCodec(rawCodec{})))
}

// NewServer is the guard: a gRPC server that knows no service, forwards
// each allowed call to etcd over backend when it names only the caller's
// job's keys and leases, and refuses every other one. identities say whose
// a forwarded connection is. log receives a line per refusal.
func NewServer(backend *grpc.ClientConn, identities Identities, log io.Writer) *grpc.Server {
	g := &guard{backend: backend, identities: identities, log: log, leases: map[uint64]string{}}
	return grpc.NewServer(
		grpc.Creds(clientAddressCredentials{}),
		grpc.UnknownServiceHandler(g.handle),
		grpc.ForceServerCodec(rawCodec{}),
		// etcd's own limits: requests up to 1.5 MiB plus gRPC's overhead,
		// and keepalive pings no more often than every 5 seconds.
		grpc.MaxRecvMsgSize(2*1024*1024),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second}),
	)
}

type guard struct {
	backend    *grpc.ClientConn
	identities Identities
	log        io.Writer

	mu sync.Mutex
	// leases are the job (its scope's first prefix) each lease granted
	// through the guard belongs to.
	leases map[uint64]string
}

// handle serves one call of any method.
func (g *guard) handle(_ any, in grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(in)
	if !ok {
		return Refusal("(unknown method)")
	}
	from := "?"
	if p, ok := peer.FromContext(in.Context()); ok {
		from = p.Addr.String()
		if c, ok := p.AuthInfo.(caller); ok && c.forwarded {
			from = c.client.String()
		}
	}
	err := Refusal(method)
	var scope Scope
	if err == nil {
		scope, err = g.scopeOf(in.Context())
	}
	if err != nil {
		fmt.Fprintf(g.log, "etcdguard: refused %s from %s: %v\n", method, from, err)
		return err
	}
	return g.forward(in, method, scope, from)
}

// scopeOf is the scope of the call's caller: the host's, for a connection
// made on the host; else that of the job whose pods hold the address the
// forward names.
func (g *guard) scopeOf(ctx context.Context) (Scope, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Scope{}, status.Error(codes.PermissionDenied, "the local cluster's elastic etcd guard does not know who calls")
	}
	c, ok := p.AuthInfo.(caller)
	if !ok || !c.forwarded {
		return hostScope, nil
	}
	if g.identities == nil {
		return Scope{}, status.Errorf(codes.PermissionDenied, "the local cluster's elastic etcd guard cannot tell whose %s is", c.client)
	}
	s, err := g.identities.ScopeOf(ctx, c.client)
	if err != nil {
		return Scope{}, status.Errorf(codes.PermissionDenied, "the local cluster's elastic etcd guard serves only the pods of PaddleJobs: %v", err)
	}
	return s, nil
}

// leaseMethods name the lease in field 1 of their requests.
var leaseMethods = map[string]bool{
	"/etcdserverpb.Lease/LeaseRevoke":     true,
	"/etcdserverpb.Lease/LeaseKeepAlive":  true,
	"/etcdserverpb.Lease/LeaseTimeToLive": true,
}

// checkRequest checks one request message of a call against the caller's
// scope: its keys, and the lease it names, which must have been granted to
// the same job through the guard.
func (g *guard) checkRequest(method string, msg []byte, s Scope) error {
	if !leaseMethods[method] {
		return s.checkRequest(method, msg)
	}
	id, err := lastVarint(msg, 1)
	if err != nil {
		return malformed(method, err)
	}
	g.mu.Lock()
	owner, known := g.leases[id]
	g.mu.Unlock()
	if !known || owner != s.Prefixes[0] {
		return status.Errorf(codes.PermissionDenied, "%s of lease %d is refused by the local cluster's elastic etcd guard: it is not a lease granted to %s", method, id, s.Job)
	}
	return nil
}

// noteResponse records whose lease etcd granted, and forgets a revoked one.
func (g *guard) noteResponse(method string, request, response []byte, s Scope) {
	var id uint64
	switch method {
	case "/etcdserverpb.Lease/LeaseGrant":
		// LeaseGrantResponse: header = 1, ID = 2.
		id, _ = lastVarint(response, 2)
	case "/etcdserverpb.Lease/LeaseRevoke":
		id, _ = lastVarint(request, 1)
	default:
		return
	}
	if id == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if method == "/etcdserverpb.Lease/LeaseRevoke" {
		delete(g.leases, id)
		return
	}
	g.leases[id] = s.Prefixes[0]
}

// forward relays a call to etcd: the caller's metadata, then both
// directions' frames until etcd ends the call, whose headers, trailers and
// status the caller gets as etcd sent them.
func (g *guard) forward(in grpc.ServerStream, method string, scope Scope, from string) error {
	ctx, cancel := context.WithCancel(in.Context())
	defer cancel()
	md, _ := metadata.FromIncomingContext(in.Context())
	ctx = metadata.NewOutgoingContext(ctx, forwardable(md))
	// The last request, for noteResponse: LeaseGrant and LeaseRevoke are
	// unary, one request before the response.
	var last atomic.Pointer[frame]
	check := func(f *frame) error {
		last.Store(f)
		err := g.checkRequest(method, f.data, scope)
		if err != nil {
			fmt.Fprintf(g.log, "etcdguard: refused %s from %s: %v\n", method, from, err)
		}
		return err
	}
	// The first request is checked before etcd hears of the call: a
	// refused one never reaches it.
	first := &frame{}
	if err := in.RecvMsg(first); errors.Is(err, io.EOF) {
		first = nil
	} else if err != nil {
		return err
	} else if err := check(first); err != nil {
		return err
	}
	out, err := g.backend.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	if first != nil {
		// An error here is etcd having ended the call: its status follows.
		_ = out.SendMsg(first)
	}
	note := func(f *frame) {
		var req []byte
		if l := last.Load(); l != nil {
			req = l.data
		}
		g.noteResponse(method, req, f.data, scope)
	}
	sent := make(chan error, 1)
	go func() { sent <- pumpRequests(in, out, check) }()
	received := make(chan error, 1)
	go func() { received <- pumpResponses(out, in, note) }()
	for {
		select {
		case err := <-sent:
			if err != nil {
				// The caller went away, or a request of its was
				// refused: end etcd's side, and stop sending to the
				// caller before the handler returns.
				cancel()
				<-received
				return err
			}
			sent = nil // the caller closed its side; etcd finishes the call
		case err := <-received:
			in.SetTrailer(out.Trailer())
			return err
		}
	}
}

// pumpRequests copies the caller's frames to etcd, each once check lets
// it, then half-closes; a frame check refuses ends the call with its error.
func pumpRequests(in grpc.ServerStream, out grpc.ClientStream, check func(*frame) error) error {
	for {
		f := &frame{}
		if err := in.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				return out.CloseSend()
			}
			return err
		}
		if err := check(f); err != nil {
			return err
		}
		if err := out.SendMsg(f); err != nil {
			// etcd ended the call; its status comes from pumpResponses.
			return nil
		}
	}
}

// pumpResponses copies etcd's headers and frames to the caller, each
// shown to note first; it returns nil when etcd ends the call with OK, else
// etcd's status.
func pumpResponses(out grpc.ClientStream, in grpc.ServerStream, note func(*frame)) error {
	header, err := out.Header()
	if err == nil && len(header) > 0 {
		if err := in.SendHeader(header); err != nil {
			return err
		}
	}
	for {
		f := &frame{}
		if err := out.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		note(f)
		if err := in.SendMsg(f); err != nil {
			return err
		}
	}
}

// forwardable is the caller's metadata without what gRPC sets itself on
// the new call (pseudo-headers, content type, user agent).
func forwardable(md metadata.MD) metadata.MD {
	out := metadata.MD{}
	for k, v := range md {
		if strings.HasPrefix(k, ":") || strings.HasPrefix(k, "grpc-") || k == "content-type" || k == "user-agent" || k == "te" {
			continue
		}
		out[k] = v
	}
	return out
}
