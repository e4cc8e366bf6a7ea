package ps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr/endpoint"
)

// ServerConfig is one pserver of a job.
type ServerConfig struct {
	// Endpoints is every pserver's host:port, in shard order; this one
	// listens on Endpoints[Index].
	Endpoints []string
	Index     int
	Trainers  int
	// JoinTimeout bounds how long every trainer may take to join.
	JoinTimeout time.Duration
	Log         *log.Logger
}

// closeGrace is how long a finished pserver waits for trainers to hang up.
const closeGrace = 10 * time.Second

// Serve runs a pserver until every trainer is done (nil) or the job fails.
func Serve(ctx context.Context, cfg ServerConfig) error {
	switch {
	case cfg.Index < 0 || cfg.Index >= len(cfg.Endpoints):
		return fmt.Errorf("pserver index %d out of range: %d pserver endpoints", cfg.Index, len(cfg.Endpoints))
	case cfg.Trainers < 1:
		return fmt.Errorf("a job needs at least one trainer, got %d", cfg.Trainers)
	}
	addr := cfg.Endpoints[cfg.Index]
	ln, err := endpoint.Listen(ctx, addr, cfg.JoinTimeout, cfg.Log.Printf)
	if err != nil {
		return err
	}
	cfg.Log.Printf("pserver %d of %d listening on %s; waiting for %d trainers",
		cfg.Index, len(cfg.Endpoints), ln.Addr(), cfg.Trainers)

	srv := &server{shard: newShard(cfg.Index, len(cfg.Endpoints), cfg.Trainers, cfg.Log), conns: map[net.Conn]bool{}}
	joinTimer := time.AfterFunc(cfg.JoinTimeout, func() {
		if missing := srv.shard.missing(); missing != "" {
			srv.shard.fail(fmt.Errorf("%s did not join within %s", missing, cfg.JoinTimeout))
		}
	})
	defer joinTimer.Stop()
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		srv.accept(ln)
	}()

	select {
	case <-srv.shard.allDone:
	case <-srv.shard.failed:
	case <-ctx.Done():
		srv.shard.fail(ctx.Err())
	}
	ln.Close()
	<-accepting // no session starts after this
	if err := srv.shard.failure(); err != nil {
		srv.closeAll()
		return fmt.Errorf("pserver %d: %w", cfg.Index, err)
	}
	cfg.Log.Printf("all %d trainers done; exiting", cfg.Trainers)
	srv.drain(closeGrace)
	return nil
}

// server serves one connection per trainer.
type server struct {
	shard *shard

	mu       sync.Mutex
	conns    map[net.Conn]bool
	sessions sync.WaitGroup
}

func (s *server) accept(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return // closed by Serve
		}
		s.mu.Lock()
		s.conns[conn] = true
		s.sessions.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.sessions.Done()
			s.session(conn)
			s.mu.Lock()
			delete(s.conns, conn)
			s.mu.Unlock()
			conn.Close()
		}()
	}
}

// session answers one connection's requests in order. The connection belongs
// to a trainer once it said hello; losing it early fails the job.
func (s *server) session(conn net.Conn) {
	w := newWire(conn)
	trainer := -1
	for {
		var req request
		if err := w.receive(&req); err != nil {
			if trainer >= 0 {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				s.shard.lost(trainer, err)
			}
			return
		}
		if req.Hello != nil {
			trainer = req.Hello.TrainerID
		}
		if err := w.send(s.handle(&req)); err != nil {
			if trainer >= 0 {
				s.shard.lost(trainer, err)
			}
			return
		}
	}
}

func (s *server) handle(req *request) *reply {
	var rep reply
	var err error
	switch {
	case req.Hello != nil:
		rep.Hello, err = s.shard.join(req.Hello)
	case req.Pull != nil:
		rep.Pull, err = s.shard.pull(req.Pull)
	case req.Push != nil:
		err = s.shard.push(req.Push)
	case req.Dump != nil:
		rep.Dump, err = s.shard.dump(req.Dump)
	case req.Done != nil:
		err = s.shard.finish(req.Done.TrainerID)
	default:
		err = errors.New("empty request")
	}
	if err != nil {
		rep.Err = err.Error()
	}
	return &rep
}

// drain waits up to grace for trainers to hang up, then hangs up on them.
func (s *server) drain(grace time.Duration) {
	idle := make(chan struct{})
	go func() {
		s.sessions.Wait()
		close(idle)
	}()
	select {
	case <-idle:
	case <-time.After(grace):
		s.closeAll()
		<-idle
	}
}

func (s *server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for conn := range s.conns {
		conn.Close()
	}
}
