package etcdguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
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
// each allowed call to etcd over backend and refuses every other one.
// log receives a line per refusal.
func NewServer(backend *grpc.ClientConn, log io.Writer) *grpc.Server {
	g := &guard{backend: backend, log: log}
	return grpc.NewServer(
		grpc.UnknownServiceHandler(g.handle),
		grpc.ForceServerCodec(rawCodec{}),
		// etcd's own limits: requests up to 1.5 MiB plus gRPC's overhead,
		// and keepalive pings no more often than every 5 seconds.
		grpc.MaxRecvMsgSize(2*1024*1024),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second}),
	)
}

type guard struct {
	backend *grpc.ClientConn
	log     io.Writer
}

// handle serves one call of any method.
func (g *guard) handle(_ any, in grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(in)
	if !ok {
		return Refusal("(unknown method)")
	}
	if err := Refusal(method); err != nil {
		from := "?"
		if p, ok := peer.FromContext(in.Context()); ok {
			from = p.Addr.String()
		}
		fmt.Fprintf(g.log, "etcdguard: refused %s from %s\n", method, from)
		return err
	}
	return g.forward(in, method)
}

// forward relays a call to etcd: the caller's metadata, then both
// directions' frames until etcd ends the call, whose headers, trailers and
// status the caller gets as etcd sent them.
func (g *guard) forward(in grpc.ServerStream, method string) error {
	ctx, cancel := context.WithCancel(in.Context())
	defer cancel()
	md, _ := metadata.FromIncomingContext(in.Context())
	ctx = metadata.NewOutgoingContext(ctx, forwardable(md))
	out, err := g.backend.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	sent := make(chan error, 1)
	go func() { sent <- pumpRequests(in, out) }()
	received := make(chan error, 1)
	go func() { received <- pumpResponses(out, in) }()
	for {
		select {
		case err := <-sent:
			if err != nil {
				// The caller went away: end etcd's side, and stop
				// sending to the caller before the handler returns.
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

// pumpRequests copies the caller's frames to etcd, then half-closes.
func pumpRequests(in grpc.ServerStream, out grpc.ClientStream) error {
	for {
		f := &frame{}
		if err := in.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				return out.CloseSend()
			}
			return err
		}
		if err := out.SendMsg(f); err != nil {
			// etcd ended the call; its status comes from pumpResponses.
			return nil
		}
	}
}

// pumpResponses copies etcd's headers and frames to the caller; it returns
// nil when etcd ends the call with OK, else etcd's status.
func pumpResponses(out grpc.ClientStream, in grpc.ServerStream) error {
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
