package collective

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"time"
)

// The rendezvous settles each epoch of an elastic job. The first endpoint of
// the membership is the coordinator. Every other member dials it and sends a
// joinHello; the coordinator keeps the connections open, tells the joiners
// whom it still waits for, and once every member of its current membership
// has joined it announces the epoch to all of them. A coordinator that is
// itself restarting simply is not reachable yet: the others keep dialing.
// Every side re-reads the membership while it waits, so a worker that
// scaling removed leaves, and a coordinator that is no longer first hands
// over.

// epoch is one generation of the ring: who trains, in which order.
type epoch struct {
	ID      uint64   // random: tells this epoch's ring links from stale ones
	Number  int      // counts the job's epochs, for logs
	Members []string // endpoints in rank order
}

// joinHello is what a worker tells the coordinator when it joins.
type joinHello struct {
	Endpoint string
	// Progress is the first pass this worker does not know to be done, or
	// -1 if it has not trained yet.
	Progress int
	// Epoch is the number of the last epoch it trained in, 0 for none.
	Epoch int
}

// coordinatorReply is one message from the coordinator to a joiner; one
// field is set.
type coordinatorReply struct {
	Waiting  []string // members that have not joined yet
	Epoch    *epoch   // the epoch is settled: form its ring
	Refused  string   // why the coordinator turned the joiner away
	Finished bool     // the job is over: there is nothing to join
}

// agreement is what a rendezvous settles for this worker.
type agreement struct {
	epoch epoch
	rank  int
	// view is the membership this worker read last: a change from it ends
	// the epoch.
	view Membership
	// progress, on rank 0, is the furthest progress any member reported.
	progress int
}

var (
	// errScaledAway: this worker is no longer in the membership.
	errScaledAway = errors.New("not in the job's membership")
	// errTryAgain: start the rendezvous over from a fresh reading of the
	// membership, keeping its deadline.
	errTryAgain = errors.New("try again")
	// errJobFinished: the job ended before this worker could join it.
	errJobFinished = errors.New("the job is finished")
)

const (
	statusInterval = 5 * time.Second // how often a wait is logged
	retryDelay     = 500 * time.Millisecond
	dialTimeout    = 5 * time.Second
	sendTimeout    = 5 * time.Second
)

// rendezvous is one worker's side of the rendezvous, kept across epochs.
type rendezvous struct {
	self    string
	dir     MembershipDir
	hub     *hub
	timeout time.Duration // of one rendezvous
	poll    time.Duration // how often the membership is re-read
	log     *log.Logger
	// finished tells whether the job ended while this worker was on its
	// way in, for when the coordinator cannot say so any more.
	finished func() bool

	// What this worker tells the coordinator; see joinHello.
	progress, epoch int

	// What the current rendezvous waits for, for logs and the timeout
	// error, and the members the coordinator last said were missing.
	waitingFor, heardMissing string
	loggedAt                 time.Time
}

// run settles the next epoch, or fails after the timeout. It returns
// errScaledAway when this worker is no longer a member.
func (r *rendezvous) run(ctx context.Context) (*agreement, error) {
	deadline := time.Now().Add(r.timeout)
	r.waitingFor, r.heardMissing, r.loggedAt = "", "", time.Time{}
	for {
		view, err := r.dir.Read()
		if err != nil {
			return nil, err
		}
		var ag *agreement
		switch rank := view.Rank(r.self); {
		case rank < 0:
			return nil, fmt.Errorf("%w (%s)", errScaledAway, view)
		case rank == 0:
			ag, err = r.gather(ctx, view, deadline)
		default:
			ag, err = r.join(ctx, view, deadline)
		}
		if !errors.Is(err, errTryAgain) {
			return ag, err
		}
		if !time.Now().Before(deadline) {
			return nil, r.timedOut()
		}
		if err := sleep(ctx, retryDelay); err != nil {
			return nil, err
		}
	}
}

// gather is the coordinator's side: wait until every member has joined,
// then announce the epoch.
func (r *rendezvous) gather(ctx context.Context, view Membership, deadline time.Time) (*agreement, error) {
	joined := map[string]joinRequest{}
	defer func() {
		for _, j := range joined {
			j.conn.Close()
		}
	}()
	poll := time.NewTicker(r.poll)
	defer poll.Stop()
	expire := time.NewTimer(time.Until(deadline))
	defer expire.Stop()
	told := "" // the missing members the joiners were last told about
	for {
		for ep, j := range joined {
			if view.Rank(ep) < 0 {
				r.refuse(j, fmt.Sprintf("%s is not in membership %q", ep, view.Version))
				delete(joined, ep)
			} else if !alive(j.conn) {
				r.log.Printf("rendezvous: %s left while waiting", ep)
				j.conn.Close()
				delete(joined, ep)
			}
		}
		var missing []string
		for _, ep := range view.Endpoints[1:] {
			if _, ok := joined[ep]; !ok {
				missing = append(missing, ep)
			}
		}
		if len(missing) == 0 {
			return r.announce(view, joined), nil
		}
		r.wait("%s to join (membership version %q)", strings.Join(missing, ", "), view.Version)
		if list := strings.Join(missing, ","); list != told {
			for ep, j := range joined {
				if err := send(j, coordinatorReply{Waiting: missing}); err != nil {
					j.conn.Close()
					delete(joined, ep)
				}
			}
			told = list
		}
		select {
		case j := <-r.hub.joins:
			ep := j.hello.Endpoint
			if ep == r.self {
				r.refuse(j, "it claims the coordinator's own endpoint "+ep)
				continue
			}
			if old, ok := joined[ep]; ok {
				old.conn.Close() // a restarted worker joins again
			}
			joined[ep] = j
			told = "" // tell the newcomer too
		case <-poll.C:
			next, err := r.dir.Read()
			if err != nil {
				r.log.Printf("rendezvous: %v", err)
				continue
			}
			if next.Rank(r.self) != 0 {
				for ep, j := range joined {
					r.refuse(j, "the membership changed: "+r.self+" no longer coordinates")
					delete(joined, ep)
				}
				return nil, errTryAgain
			}
			view = next
		case <-expire.C:
			return nil, r.timedOut()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// announce settles the epoch of view and tells every joined member.
func (r *rendezvous) announce(view Membership, joined map[string]joinRequest) *agreement {
	progress, number := r.progress, r.epoch
	for _, j := range joined {
		progress = max(progress, j.hello.Progress)
		number = max(number, j.hello.Epoch)
	}
	ep := epoch{ID: rand.Uint64(), Number: number + 1, Members: view.Endpoints}
	for addr, j := range joined {
		if err := send(j, coordinatorReply{Epoch: &ep}); err != nil {
			// It will miss the ring, which then fails: a new rendezvous.
			r.log.Printf("rendezvous: could not announce epoch %d to %s: %v", ep.Number, addr, err)
		}
	}
	return &agreement{epoch: ep, rank: 0, view: view, progress: progress}
}

// join is a member's side: join the coordinator, the first member of view,
// and wait for it to announce the epoch.
func (r *rendezvous) join(ctx context.Context, view Membership, deadline time.Time) (*agreement, error) {
	coordinator := view.Endpoints[0]
	dialer := net.Dialer{Timeout: min(dialTimeout, time.Until(deadline))}
	conn, err := dialer.DialContext(ctx, "tcp", coordinator)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if r.finished() {
			return nil, errJobFinished
		}
		r.wait("coordinator %s, unreachable: %v", coordinator, err)
		return nil, errTryAgain
	}
	defer conn.Close()
	conn.SetWriteDeadline(time.Now().Add(sendTimeout))
	_, err = conn.Write([]byte(joinMagic))
	if err == nil {
		err = gob.NewEncoder(conn).Encode(joinHello{Endpoint: r.self, Progress: r.progress, Epoch: r.epoch})
	}
	if err != nil {
		r.wait("coordinator %s, which dropped the connection: %v", coordinator, err)
		return nil, errTryAgain
	}
	conn.SetWriteDeadline(time.Time{})

	replies, readErr := make(chan coordinatorReply), make(chan error, 1)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		dec := gob.NewDecoder(conn)
		for {
			var rep coordinatorReply
			if err := dec.Decode(&rep); err != nil {
				readErr <- err
				return
			}
			select {
			case replies <- rep:
			case <-quit:
				return
			}
		}
	}()
	poll := time.NewTicker(r.poll)
	defer poll.Stop()
	expire := time.NewTimer(time.Until(deadline))
	defer expire.Stop()
	for {
		select {
		case rep := <-replies:
			switch {
			case rep.Epoch != nil:
				rank := slices.Index(rep.Epoch.Members, r.self)
				if rank < 1 {
					r.wait("coordinator %s, whose epoch %d leaves %s out", coordinator, rep.Epoch.Number, r.self)
					return nil, errTryAgain
				}
				return &agreement{epoch: *rep.Epoch, rank: rank, view: view}, nil
			case rep.Finished:
				return nil, errJobFinished
			case rep.Refused != "":
				r.wait("coordinator %s, which turned this worker away: %s", coordinator, rep.Refused)
				return nil, errTryAgain
			default:
				r.heardMissing = strings.Join(rep.Waiting, ", ")
				r.wait("%s to join (says coordinator %s)", r.heardMissing, coordinator)
			}
		case err := <-readErr:
			r.wait("coordinator %s, which dropped the connection: %v", coordinator, err)
			return nil, errTryAgain
		case j := <-r.hub.joins:
			r.refuse(j, fmt.Sprintf("%s does not coordinate: %s does", r.self, coordinator))
		case <-poll.C:
			next, err := r.dir.Read()
			if err != nil {
				r.log.Printf("rendezvous: %v", err)
				continue
			}
			if next.Rank(r.self) < 1 || next.Endpoints[0] != coordinator {
				return nil, errTryAgain
			}
			view = next
		case <-expire.C:
			return nil, r.timedOut()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// wait records what the rendezvous waits for, logging it when it changes
// and every statusInterval.
func (r *rendezvous) wait(format string, args ...any) {
	what := fmt.Sprintf(format, args...)
	if what != r.waitingFor || time.Since(r.loggedAt) >= statusInterval {
		r.log.Printf("rendezvous: waiting for %s", what)
		r.loggedAt = time.Now()
	}
	r.waitingFor = what
}

func (r *rendezvous) timedOut() error {
	err := fmt.Errorf("rendezvous: gave up after %s waiting for %s", r.timeout, r.waitingFor)
	if r.heardMissing != "" && !strings.Contains(r.waitingFor, r.heardMissing) {
		err = fmt.Errorf("%w; the coordinator last waited for %s", err, r.heardMissing)
	}
	return err
}

// turnAwayLateJoiners tells the workers that asked to join while the job
// ended that it is over.
func turnAwayLateJoiners(h *hub) {
	for {
		select {
		case j := <-h.joins:
			send(j, coordinatorReply{Finished: true}) // best effort: else it sees the checkpoint
			j.conn.Close()
		default:
			return
		}
	}
}

// refuse turns a joiner away, telling it why.
func (r *rendezvous) refuse(j joinRequest, why string) {
	send(j, coordinatorReply{Refused: why}) // best effort: it learns either way
	j.conn.Close()
}

func send(j joinRequest, rep coordinatorReply) error {
	j.conn.SetWriteDeadline(time.Now().Add(sendTimeout))
	defer j.conn.SetWriteDeadline(time.Time{})
	return j.enc.Encode(rep)
}

// alive reports whether a joiner still holds its connection open. A joiner
// sends nothing after its hello, so a read that ends before a short
// deadline means the connection closed.
func alive(conn net.Conn) bool {
	conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	defer conn.SetReadDeadline(time.Time{})
	_, err := conn.Read(make([]byte, 1))
	return errors.Is(err, os.ErrDeadlineExceeded)
}
