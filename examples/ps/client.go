package ps

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr/endpoint"
)

// pservers is a trainer's connections to every pserver, in shard order.
type pservers struct {
	conns      []*pserverConn
	stopCancel func() bool // stops closing the connections when ctx ends
}

type pserverConn struct {
	name string // "pserver 1 at host:port", for messages
	wire *wire
}

// dialPServers connects to every pserver, waiting for those not up yet.
func dialPServers(ctx context.Context, addrs []string, timeout time.Duration, logf endpoint.Logf) (*pservers, error) {
	ps := &pservers{conns: make([]*pserverConn, len(addrs))}
	err := forEach(len(addrs), func(i int) error {
		name := fmt.Sprintf("pserver %d", i)
		conn, err := endpoint.Dial(ctx, name, addrs[i], timeout, logf)
		if err != nil {
			return err
		}
		ps.conns[i] = &pserverConn{name: fmt.Sprintf("%s at %s", name, addrs[i]), wire: newWire(conn)}
		return nil
	})
	if err != nil {
		ps.closeConns()
		return nil, err
	}
	// Closing the connections unblocks every call in flight.
	ps.stopCancel = context.AfterFunc(ctx, ps.closeConns)
	return ps, nil
}

func (ps *pservers) close() {
	ps.stopCancel()
	ps.closeConns()
}

func (ps *pservers) closeConns() {
	for _, p := range ps.conns {
		if p != nil {
			p.wire.conn.Close()
		}
	}
}

// callAll sends every pserver its request, concurrently, and returns the
// replies in shard order.
func (ps *pservers) callAll(req func(shard int) *request) ([]*reply, error) {
	replies := make([]*reply, len(ps.conns))
	err := forEach(len(ps.conns), func(i int) error {
		var err error
		replies[i], err = ps.conns[i].call(req(i))
		return err
	})
	return replies, err
}

// call sends one request and waits for its reply.
func (p *pserverConn) call(req *request) (*reply, error) {
	if err := p.wire.send(req); err != nil {
		return nil, fmt.Errorf("%s: send: %w", p.name, err)
	}
	var rep reply
	if err := p.wire.receive(&rep); err != nil {
		return nil, fmt.Errorf("%s: connection lost: %w", p.name, err)
	}
	if rep.Err != "" {
		return nil, fmt.Errorf("%s: %s", p.name, rep.Err)
	}
	return &rep, nil
}

// forEach runs do(0..n-1) concurrently and joins their errors.
func forEach(n int, do func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = do(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
