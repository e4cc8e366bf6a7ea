package launcher

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// ExitError ends `paddlejob launch` with Code: the trainer's exit code, or
// the pserver's when it failed first.
type ExitError struct {
	Code   int
	Reason string
}

func (e *ExitError) Error() string { return e.Reason }

// processExit describes how a child ended, as an ExitError.
func processExit(p *process) *ExitError {
	if p.code > 128 {
		return &ExitError{Code: p.code, Reason: fmt.Sprintf("%s was ended by signal %d (exit code %d)", p.role, p.code-128, p.code)}
	}
	return &ExitError{Code: p.code, Reason: fmt.Sprintf("%s exited with code %d", p.role, p.code)}
}

// supervisor runs the pserver (optional) and the trainer of one pod.
type supervisor struct {
	pserver      *processSpec // nil when the trainer runs alone
	trainer      processSpec
	trainerDelay time.Duration // between starting the pserver and the trainer
	// servers are every pserver of the job: the trainer starts once all
	// accept connections (serverswait.go).
	servers []netip.AddrPort
	grace   time.Duration // between SIGTERM and SIGKILL
	signals <-chan os.Signal
	log     io.Writer

	// After the trainer succeeds the pserver keeps serving the job's other
	// trainers until it exits itself, othersDone reports true (polled every
	// pollInterval), or linger passes.
	linger       time.Duration
	pollInterval time.Duration
	othersDone   func() bool
	trainerEnded func(code int) // called once the trainer exited

	// restarts, when set, restarts every pod's processes together once a
	// trainer is silent too long (grouprestart.go); the pserver is required.
	restarts *groupRestart
}

// run starts the pserver, then the trainer, and waits for the trainer. It
// returns nil when the trainer exits 0 and an *ExitError otherwise. A
// trainer's failure stops the pserver at once, its success after the
// linger (see supervisor); a pserver's failure stops the trainer; SIGINT and
// SIGTERM, or ctx ending, are passed on to both.
func (s *supervisor) run(ctx context.Context) error {
	r := &running{s: s}
	var pserverDone, trainerDone <-chan struct{}
	if s.pserver != nil {
		p, err := startProcess(*s.pserver)
		if err != nil {
			return err
		}
		r.pserver, pserverDone = p, p.done
	}
	startTrainer := serversListening(ctx, s.trainerDelay, s.servers, s.pollInterval, s.log)
	var watch <-chan time.Time
	if s.restarts != nil {
		t := time.NewTicker(s.pollInterval)
		defer t.Stop()
		watch = t.C
	}
	ctxDone := ctx.Done()
	for {
		select {
		case <-startTrainer:
			startTrainer = nil
			p, err := startProcess(s.trainer)
			if err != nil {
				r.stopAll()
				return err
			}
			r.trainer, trainerDone = p, p.done

		case <-trainerDone:
			return r.trainerEnded(ctx)

		case <-pserverDone:
			pserverDone = nil
			if err := r.pserverEnded(); err != nil {
				return err
			}

		case <-watch:
			restarted, err := r.watchGroup(ctx)
			if err != nil {
				return err
			}
			if restarted {
				pserverDone, trainerDone = r.pserver.done, nil
				startTrainer = serversListening(ctx, s.trainerDelay, s.servers, s.pollInterval, s.log)
			}

		case sig := <-s.signals:
			if err := r.signalled(sig); err != nil {
				return err
			}

		case <-ctxDone:
			ctxDone = nil
			if err := r.ctxEnded(); err != nil {
				return err
			}

		case <-r.killAll:
			fmt.Fprintf(s.log, "paddlejob launch: still running %s after the signal; killing\n", s.grace)
			r.signalBoth(syscall.SIGKILL)
		}
	}
}

// ctxEnded passes on the signal that ended ctx — usually waiting in
// s.signals too — or else a SIGTERM of our own.
func (r *running) ctxEnded() error {
	select {
	case sig := <-r.s.signals:
		return r.signalled(sig)
	default:
		if !r.forwarded {
			return r.signalled(syscall.SIGTERM)
		}
	}
	return nil
}

// running is the state of a launch: its children, and whether a signal was
// passed on to them (then killAll fires once the grace period is over).
type running struct {
	s                *supervisor
	pserver, trainer *process
	forwarded        bool
	killAll          <-chan time.Time
}

func (r *running) stopAll() {
	for _, p := range []*process{r.trainer, r.pserver} {
		if p != nil {
			p.stop(r.s.grace)
		}
	}
}

func (r *running) signalBoth(sig syscall.Signal) {
	for _, p := range []*process{r.pserver, r.trainer} {
		if p != nil {
			p.signal(sig)
		}
	}
}

// signalled passes sig on to both children; before the trainer started it
// stops the pserver and ends the launch with an ExitError.
func (r *running) signalled(sig os.Signal) error {
	sysSig, ok := sig.(syscall.Signal)
	if !ok {
		return nil
	}
	fmt.Fprintf(r.s.log, "paddlejob launch: passing %s on to the pserver and the trainer\n", sysSig)
	r.forwarded = true
	if r.trainer == nil {
		r.stopAll()
		return &ExitError{Code: 128 + int(sysSig), Reason: fmt.Sprintf("interrupted by %s before the trainer started", sysSig)}
	}
	r.signalBoth(sysSig)
	if r.killAll == nil {
		r.killAll = time.After(r.s.grace)
	}
	return nil
}

// trainerEnded ends the launch with the trainer's exit: after a success the
// pserver goes on serving the other pods' trainers a while.
func (r *running) trainerEnded(ctx context.Context) error {
	if r.s.trainerEnded != nil {
		r.s.trainerEnded(r.trainer.code)
	}
	if r.pserver != nil {
		if r.trainer.code == 0 && !r.forwarded {
			r.s.lingerPServer(ctx, r.pserver)
		}
		r.pserver.stop(r.s.grace)
	}
	if r.trainer.code == 0 {
		return nil
	}
	return processExit(r.trainer)
}

// pserverEnded ends the launch when the pserver failed on its own.
func (r *running) pserverEnded() error {
	switch {
	case r.forwarded:
		// It ended because it was asked to; the trainer decides.
	case r.pserver.code == 0:
		fmt.Fprintln(r.s.log, "paddlejob launch: the pserver exited with code 0; the trainer goes on")
	default:
		e := processExit(r.pserver)
		fmt.Fprintf(r.s.log, "paddlejob launch: %s before the trainer finished; stopping the trainer\n", e.Reason)
		r.stopAll()
		e.Reason += " before the trainer finished"
		return e
	}
	return nil
}

// lingerPServer waits while the pserver may still serve other pods'
// trainers: until it exits, the other trainers are done, linger passes, or
// a signal or ctx says to stop.
func (s *supervisor) lingerPServer(ctx context.Context, pserver *process) {
	if pserver.exited() {
		return
	}
	if s.othersDone != nil && s.othersDone() {
		fmt.Fprintln(s.log, "paddlejob launch: all trainers are done; stopping the pserver")
		return
	}
	fmt.Fprintf(s.log, "paddlejob launch: the trainer is done; the pserver serves the other trainers until they are done (at most %s)\n", s.linger)
	deadline := time.After(s.linger)
	poll := time.NewTicker(s.pollInterval)
	defer poll.Stop()
	for {
		select {
		case <-pserver.done:
			if pserver.code != 0 {
				fmt.Fprintf(s.log, "paddlejob launch: warning: %s while serving the other trainers\n", processExit(pserver).Reason)
			}
			return
		case <-poll.C:
			if s.othersDone != nil && s.othersDone() {
				fmt.Fprintln(s.log, "paddlejob launch: all trainers are done; stopping the pserver")
				return
			}
		case <-deadline:
			fmt.Fprintf(s.log, "paddlejob launch: other trainers still running after %s; stopping the pserver\n", s.linger)
			return
		case <-s.signals:
			return
		case <-ctx.Done():
			return
		}
	}
}
