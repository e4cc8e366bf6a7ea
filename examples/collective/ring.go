package collective

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr/endpoint"
)

// Ring is one worker's link in a ring of workers: it sends to the next rank
// and receives from the previous one.
type Ring struct {
	rank, size int
	next, prev net.Conn
	stop       func() bool // stops closing the connections when ctx ends
	sendBuf    []byte
	recvBuf    []byte
}

// RingConfig places a worker in the ring.
type RingConfig struct {
	// Endpoints is every worker's host:port, in rank order. With one
	// endpoint or none the ring is a single worker and uses no network.
	Endpoints []string
	Rank      int
	// ConnectTimeout bounds the wait for the neighbours to come up.
	ConnectTimeout time.Duration
	Log            *log.Logger
}

// size is the number of workers in the ring, checked against the rank.
func (cfg RingConfig) size() (int, error) {
	size := max(len(cfg.Endpoints), 1)
	if cfg.Rank < 0 || cfg.Rank >= size {
		return 0, fmt.Errorf("rank %d out of range [0, %d)", cfg.Rank, size)
	}
	return size, nil
}

// ringAccepted is the byte the previous rank's link hears back when it is
// taken.
const ringAccepted = 1

// brokenRing marks the failures of the ring itself: a neighbour died, left
// or never linked up. An elastic worker meets them by forming a new ring; a
// fixed one fails.
type brokenRing struct{ err error }

func (e brokenRing) Error() string { return e.err.Error() }
func (e brokenRing) Unwrap() error { return e.err }

func isBrokenRing(err error) bool { return errors.As(err, new(brokenRing)) }

// Connect joins a fixed ring: it listens on its own endpoint until both
// neighbours are linked. When ctx ends, every pending operation fails.
func Connect(ctx context.Context, cfg RingConfig) (*Ring, error) {
	if size, err := cfg.size(); err != nil || size == 1 {
		return link(ctx, nil, cfg, 0)
	}
	h, err := listenHub(ctx, cfg.Endpoints[cfg.Rank], cfg.ConnectTimeout, cfg.Log)
	if err != nil {
		return nil, err
	}
	defer h.Close() // the ring is fixed once both neighbours are linked
	cfg.Log.Printf("rank %d of %d listening on %s", cfg.Rank, len(cfg.Endpoints), cfg.Endpoints[cfg.Rank])
	return link(ctx, h, cfg, 0)
}

// link forms the ring of one epoch: it dials the next rank and takes the
// previous one from the hub, turning away links of other epochs. When ctx
// ends, every pending operation fails.
func link(ctx context.Context, h *hub, cfg RingConfig, epoch uint64) (*Ring, error) {
	size, err := cfg.size()
	if err != nil {
		return nil, err
	}
	r := &Ring{rank: cfg.Rank, size: size}
	if size == 1 {
		return r, nil
	}
	linkCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var dialErr, acceptErr error
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		r.prev, acceptErr = acceptPrev(linkCtx, h, cfg, epoch)
	}()
	r.next, dialErr = dialNext(linkCtx, cfg, epoch)
	if dialErr != nil {
		cancel() // gives up on the previous rank too
	}
	<-accepted
	if err := errors.Join(dialErr, acceptErr); err != nil {
		r.Close()
		return nil, brokenRing{err}
	}
	r.stop = context.AfterFunc(ctx, r.closeConns)
	return r, nil
}

// dialNext connects to the next rank and introduces itself.
func dialNext(ctx context.Context, cfg RingConfig, epoch uint64) (net.Conn, error) {
	size := len(cfg.Endpoints)
	next := (cfg.Rank + 1) % size
	name := fmt.Sprintf("rank %d", next)
	conn, err := endpoint.Dial(ctx, name, cfg.Endpoints[next], cfg.ConnectTimeout, cfg.Log.Printf)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetDeadline(time.Now().Add(cfg.ConnectTimeout))
	ack := make([]byte, 1)
	if _, err = conn.Write(linkHello{epoch, uint32(cfg.Rank), uint32(size)}.encode()); err == nil {
		_, err = io.ReadFull(conn, ack)
	}
	if err == nil && ack[0] != ringAccepted {
		err = fmt.Errorf("unexpected answer %d", ack[0])
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s at %s refused this rank (ring of %d): %w", name, cfg.Endpoints[next], size, err)
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}

// acceptPrev waits for the previous rank's link, turning away anything else.
func acceptPrev(ctx context.Context, h *hub, cfg RingConfig, epoch uint64) (net.Conn, error) {
	size := len(cfg.Endpoints)
	prev := (cfg.Rank + size - 1) % size
	timeout := time.NewTimer(cfg.ConnectTimeout)
	defer timeout.Stop()
	for {
		var req linkRequest
		select {
		case req = <-h.links:
		case <-timeout.C:
			return nil, fmt.Errorf("rank %d at %s did not connect within %s", prev, cfg.Endpoints[prev], cfg.ConnectTimeout)
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for rank %d to connect: %w", prev, ctx.Err())
		}
		from := req.conn.RemoteAddr()
		switch rank, peerSize := int(req.hello.rank), int(req.hello.size); {
		case req.hello.epoch != epoch:
			cfg.Log.Printf("turned away rank %d from %s: it links epoch %x, this rank %x", rank, from, req.hello.epoch, epoch)
		case peerSize != size:
			cfg.Log.Printf("turned away rank %d from %s: it counts %d workers, this rank %d", rank, from, peerSize, size)
		case rank != prev:
			cfg.Log.Printf("turned away rank %d from %s: expected rank %d", rank, from, prev)
		default:
			req.conn.SetWriteDeadline(time.Now().Add(helloTimeout))
			if _, err := req.conn.Write([]byte{ringAccepted}); err != nil {
				req.conn.Close()
				return nil, fmt.Errorf("accept rank %d: %w", prev, err)
			}
			req.conn.SetWriteDeadline(time.Time{})
			return req.conn, nil
		}
		req.conn.Close()
	}
}

// Rank is this worker's rank; Size the number of workers.
func (r *Ring) Rank() int { return r.rank }
func (r *Ring) Size() int { return r.size }

// Close leaves the ring.
func (r *Ring) Close() {
	if r.stop != nil {
		r.stop()
	}
	r.closeConns()
}

func (r *Ring) closeConns() {
	for _, c := range []net.Conn{r.next, r.prev} {
		if c != nil {
			c.Close()
		}
	}
}

// AllReduce replaces data, on every worker, by its sum over all workers.
// Every worker must call it with the same length. The data is cut into one
// chunk per worker; a reduce-scatter leaves each worker with one chunk fully
// summed, an all-gather passes the summed chunks around. Every worker ends
// with bit-identical values.
func (r *Ring) AllReduce(data []float64) error {
	n := r.size
	if n == 1 {
		return nil
	}
	chunk := func(i int) []float64 {
		i = ((i % n) + n) % n
		return data[i*len(data)/n : (i+1)*len(data)/n]
	}
	for i := range n - 1 {
		if err := r.exchange(chunk(r.rank-i), chunk(r.rank-i-1), true); err != nil {
			return fmt.Errorf("all-reduce: reduce-scatter: %w", err)
		}
	}
	for i := range n - 1 {
		if err := r.exchange(chunk(r.rank+1-i), chunk(r.rank-i), false); err != nil {
			return fmt.Errorf("all-reduce: all-gather: %w", err)
		}
	}
	return nil
}

// exchange sends out to the next rank while receiving len(in) values from
// the previous one, which are added into in or overwrite it. Sending and
// receiving at once keeps a ring of blocked writers from deadlocking.
func (r *Ring) exchange(out, in []float64, add bool) error {
	sent := make(chan error, 1)
	go func() { sent <- r.send(out) }()
	recvErr := r.receive(in, add)
	switch sendErr := <-sent; {
	case sendErr == nil:
		return recvErr
	case recvErr == nil:
		return sendErr
	default:
		return fmt.Errorf("%w; %w", sendErr, recvErr)
	}
}

// A frame is the value count (uint32) then the values, little-endian.
func (r *Ring) send(values []float64) error {
	need := 4 + 8*len(values)
	if cap(r.sendBuf) < need {
		r.sendBuf = make([]byte, need)
	}
	buf := r.sendBuf[:need]
	binary.LittleEndian.PutUint32(buf, uint32(len(values)))
	for i, x := range values {
		binary.LittleEndian.PutUint64(buf[4+8*i:], math.Float64bits(x))
	}
	if _, err := r.next.Write(buf); err != nil {
		return brokenRing{fmt.Errorf("send to rank %d: %w", (r.rank+1)%r.size, err)}
	}
	return nil
}

func (r *Ring) receive(in []float64, add bool) error {
	prev := (r.rank + r.size - 1) % r.size
	var header [4]byte
	if _, err := io.ReadFull(r.prev, header[:]); err != nil {
		return brokenRing{fmt.Errorf("receive from rank %d: %w", prev, err)}
	}
	if n := binary.LittleEndian.Uint32(header[:]); int(n) != len(in) {
		return fmt.Errorf("rank %d sent %d values, want %d: do all workers run the same model?", prev, n, len(in))
	}
	need := 8 * len(in)
	if cap(r.recvBuf) < need {
		r.recvBuf = make([]byte, need)
	}
	buf := r.recvBuf[:need]
	if _, err := io.ReadFull(r.prev, buf); err != nil {
		return brokenRing{fmt.Errorf("receive from rank %d: %w", prev, err)}
	}
	for i := range in {
		x := math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:]))
		if add {
			in[i] += x
		} else {
			in[i] = x
		}
	}
	return nil
}
