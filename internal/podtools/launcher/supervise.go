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
}

// run starts the pserver, then the trainer, and waits for the trainer. It
// returns nil when the trainer exits 0 and an *ExitError otherwise. A
// trainer's failure stops the pserver at once, its success after the
// linger (see supervisor); a pserver's failure stops the trainer; SIGINT and
// SIGTERM, or ctx ending, are passed on to both.
func (s *supervisor) run(ctx context.Context) error {
	var pserver, trainer *process
	var pserverDone, trainerDone <-chan struct{}
	stopAll := func() {
		for _, p := range []*process{trainer, pserver} {
			if p != nil {
				p.stop(s.grace)
			}
		}
	}
	if s.pserver != nil {
		p, err := startProcess(*s.pserver)
		if err != nil {
			return err
		}
		pserver, pserverDone = p, p.done
	}
	startTrainer := serversListening(ctx, s.trainerDelay, s.servers, s.pollInterval, s.log)

	var (
		forwarded bool
		killAll   <-chan time.Time
		ctxDone   = ctx.Done()
	)
	// forward passes sig on to both children; it reports false when the
	// trainer had not started, which ends the launch.
	forward := func(sig syscall.Signal) bool {
		fmt.Fprintf(s.log, "paddlejob launch: passing %s on to the pserver and the trainer\n", sig)
		forwarded = true
		if trainer == nil {
			stopAll()
			return false
		}
		for _, p := range []*process{pserver, trainer} {
			if p != nil {
				p.signal(sig)
			}
		}
		if killAll == nil {
			killAll = time.After(s.grace)
		}
		return true
	}
	interrupted := func(sig syscall.Signal) error {
		return &ExitError{Code: 128 + int(sig), Reason: fmt.Sprintf("interrupted by %s before the trainer started", sig)}
	}
	for {
		select {
		case <-startTrainer:
			startTrainer = nil
			p, err := startProcess(s.trainer)
			if err != nil {
				stopAll()
				return err
			}
			trainer, trainerDone = p, p.done

		case <-trainerDone:
			if s.trainerEnded != nil {
				s.trainerEnded(trainer.code)
			}
			if pserver != nil {
				if trainer.code == 0 && !forwarded {
					s.lingerPServer(ctx, pserver)
				}
				pserver.stop(s.grace)
			}
			if trainer.code == 0 {
				return nil
			}
			return processExit(trainer)

		case <-pserverDone:
			pserverDone = nil
			switch {
			case forwarded:
				// It ended because it was asked to; the trainer decides.
			case pserver.code == 0:
				fmt.Fprintln(s.log, "paddlejob launch: the pserver exited with code 0; the trainer goes on")
			default:
				e := processExit(pserver)
				fmt.Fprintf(s.log, "paddlejob launch: %s before the trainer finished; stopping the trainer\n", e.Reason)
				stopAll()
				e.Reason += " before the trainer finished"
				return e
			}

		case sig := <-s.signals:
			if sysSig, ok := sig.(syscall.Signal); ok && !forward(sysSig) {
				return interrupted(sysSig)
			}

		case <-ctxDone:
			ctxDone = nil
			// The signal that ended ctx is usually waiting in s.signals too;
			// pass that one on rather than a SIGTERM of our own.
			select {
			case sig := <-s.signals:
				if sysSig, ok := sig.(syscall.Signal); ok && !forward(sysSig) {
					return interrupted(sysSig)
				}
			default:
				if !forwarded && !forward(syscall.SIGTERM) {
					return interrupted(syscall.SIGTERM)
				}
			}

		case <-killAll:
			fmt.Fprintf(s.log, "paddlejob launch: still running %s after the signal; killing\n", s.grace)
			for _, p := range []*process{pserver, trainer} {
				if p != nil {
					p.signal(syscall.SIGKILL)
				}
			}
		}
	}
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
