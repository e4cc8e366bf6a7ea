package collective

import (
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"io"
	"log"
	"net"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr/endpoint"
)

// Every connection to a worker opens with one of these 8-byte magics.
const (
	linkMagic = "PJRING02" // a ring link: linkHello follows
	joinMagic = "PJJOIN01" // a rendezvous join: gob messages follow
)

// helloTimeout bounds how long a new connection may take to say what it is.
const helloTimeout = 10 * time.Second

// linkHello opens a link from a rank to the next: linkMagic, then the epoch,
// the sender's rank and the ring size, little-endian.
type linkHello struct {
	epoch      uint64
	rank, size uint32
}

const linkHelloSize = len(linkMagic) + 8 + 4 + 4

func (h linkHello) encode() []byte {
	b := make([]byte, linkHelloSize)
	n := copy(b, linkMagic)
	binary.LittleEndian.PutUint64(b[n:], h.epoch)
	binary.LittleEndian.PutUint32(b[n+8:], h.rank)
	binary.LittleEndian.PutUint32(b[n+12:], h.size)
	return b
}

// linkRequest is a peer asking to be this worker's previous rank.
type linkRequest struct {
	conn  net.Conn
	hello linkHello
}

// joinRequest is a worker asking this one, as coordinator, for an epoch.
// The coordinator answers through enc.
type joinRequest struct {
	conn  net.Conn
	enc   *gob.Encoder
	hello joinHello
}

// hub accepts every connection to this worker's endpoint and sorts them by
// their magic: ring links go to links, rendezvous joins to joins, anything
// else is turned away. An elastic worker keeps one hub for its whole life so
// that peers can reach it at any time, even while it trains; requests wait in
// their own goroutines until the worker takes them.
type hub struct {
	ln     net.Listener
	log    *log.Logger
	links  chan linkRequest
	joins  chan joinRequest
	ctx    context.Context // ends when the hub closes
	cancel context.CancelFunc
}

// listenHub listens on self (host:port), resolving the host for up to
// resolveTimeout.
func listenHub(ctx context.Context, self string, resolveTimeout time.Duration, logger *log.Logger) (*hub, error) {
	ln, err := endpoint.Listen(ctx, self, resolveTimeout, logger.Printf)
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithCancel(context.Background())
	h := &hub{ln: ln, log: logger, links: make(chan linkRequest), joins: make(chan joinRequest), ctx: hctx, cancel: cancel}
	go h.serve()
	return h, nil
}

// Close stops listening and drops the requests nobody took.
func (h *hub) Close() {
	h.cancel()
	h.ln.Close()
}

func (h *hub) serve() {
	for {
		conn, err := h.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			h.log.Printf("accept on %s: %v", h.ln.Addr(), err)
			time.Sleep(50 * time.Millisecond) // e.g. out of file descriptors: let some close
			continue
		}
		go h.sort(conn)
	}
}

// sort reads what conn is and hands it over, or closes it.
func (h *hub) sort(conn net.Conn) {
	stop := context.AfterFunc(h.ctx, func() { conn.Close() })
	conn.SetReadDeadline(time.Now().Add(helloTimeout))
	magic := make([]byte, len(linkMagic))
	_, err := io.ReadFull(conn, magic)
	switch {
	case err == nil && string(magic) == linkMagic:
		rest := make([]byte, linkHelloSize-len(linkMagic))
		if _, err := io.ReadFull(conn, rest); err != nil {
			break
		}
		hello := linkHello{
			epoch: binary.LittleEndian.Uint64(rest),
			rank:  binary.LittleEndian.Uint32(rest[8:]),
			size:  binary.LittleEndian.Uint32(rest[12:]),
		}
		deliver(h, stop, conn, h.links, linkRequest{conn, hello})
		return
	case err == nil && string(magic) == joinMagic:
		var hello joinHello
		if err := gob.NewDecoder(conn).Decode(&hello); err != nil {
			break
		}
		deliver(h, stop, conn, h.joins, joinRequest{conn, gob.NewEncoder(conn), hello})
		return
	}
	if stop() { // else the hub closed, which cut the hello short
		h.log.Printf("turned away a connection from %s: neither a ring link nor a rendezvous join", conn.RemoteAddr())
		conn.Close()
	}
}

// deliver passes a request on to whoever takes it, which then owns conn.
func deliver[T any](h *hub, stop func() bool, conn net.Conn, ch chan<- T, req T) {
	if !stop() {
		return // the hub closed, and conn with it
	}
	conn.SetReadDeadline(time.Time{})
	select {
	case ch <- req:
	case <-h.ctx.Done():
		conn.Close()
	}
}
