package launcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Group restarts (--progress-deadline): Paddle can hang where no process
// exits — GEO parameter-server training's start-up barrier loses a trainer
// now and then (docs/paddle-known-issues.md) — and a plain batch/v1 Job has
// no operator to notice. A trainer that prints nothing for the deadline is
// taken as hung. Restarting one pod's processes would not help: the other
// pods' pservers keep the hung barrier's state. So every pod of the run
// stops its pserver and trainer, waits until all have, and starts both
// again, as the PaddleJob operator restarts a whole job. The pods agree
// through files in the job's shared output directory, where the trainers
// already record their end (finish.go):
//
//	<output>/restarts/<run>/<attempt>/requested       why a restart was asked for
//	<output>/restarts/<run>/<attempt>/node_<id>       node <id> stopped its processes
//
// <run> names the set of pods (a hash of their UIDs), so a later run of a Job
// of the same name never meets these files. A restart is asked for only
// while no trainer has ended: once one has, a fresh start of every pod is
// not what the job needs, and the hung launcher fails instead.

// groupRestart is one pod's view of the restart files of its run.
type groupRestart struct {
	dir      string // <output>/restarts/<run>
	output   string // <output>, where trainers record their end
	id       int    // this pod's trainer id
	nodes    int    // how many pods take part
	deadline time.Duration
	max      int           // restarts allowed
	wait     time.Duration // for every pod to stop, at a restart
	attempt  int           // 0 on the first start, n after the n-th restart
}

// runName names a set of pods: the same for every pod that found the same
// peers, different for any other set.
func runName(pods []corev1.Pod) string {
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = string(p.UID)
	}
	slices.Sort(uids)
	sum := sha256.Sum256([]byte(strings.Join(uids, ",")))
	return hex.EncodeToString(sum[:6])
}

func (g *groupRestart) attemptDir(n int) string { return filepath.Join(g.dir, strconv.Itoa(n)) }

// requested reports whether any pod asked for the next restart.
func (g *groupRestart) requested() bool {
	_, err := os.Stat(filepath.Join(g.attemptDir(g.attempt+1), "requested"))
	return err == nil
}

// request asks every pod for the next restart, saying why. A request
// another pod made first stands.
func (g *groupRestart) request(reason string) error {
	dir := g.attemptDir(g.attempt + 1)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "requested"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "node_%d: %s\n", g.id, reason)
	return errors.Join(err, f.Close())
}

// markStopped records that this pod stopped its processes for the next
// restart.
func (g *groupRestart) markStopped() error {
	return os.WriteFile(filepath.Join(g.attemptDir(g.attempt+1), "node_"+strconv.Itoa(g.id)), nil, 0o644)
}

// allStopped reports whether every pod stopped its processes for the next
// restart.
func (g *groupRestart) allStopped() bool {
	for id := range g.nodes {
		if _, err := os.Stat(filepath.Join(g.attemptDir(g.attempt+1), "node_"+strconv.Itoa(id))); err != nil {
			return false
		}
	}
	return true
}

// anyTrainerEnded reports whether a trainer of the job recorded its end.
func (g *groupRestart) anyTrainerEnded() bool {
	for id := range g.nodes {
		if _, err := os.Stat(filepath.Join(g.output, "node_"+strconv.Itoa(id), trainerExitFile)); err == nil {
			return true
		}
	}
	return false
}

// stallAction is what a pod does about its trainer's silence.
type stallAction int

const (
	stallNone    stallAction = iota // within the deadline
	stallRestart                    // ask every pod to restart
	stallFail                       // give up: no restart left, or a trainer ended
)

// onSilence decides what a trainer silent for quiet calls for.
func (g *groupRestart) onSilence(quiet time.Duration) (stallAction, string) {
	if quiet < g.deadline {
		return stallNone, ""
	}
	why := fmt.Sprintf("the trainer printed nothing for %s (--progress-deadline=%s)", quiet.Round(time.Second), g.deadline)
	switch {
	case g.attempt >= g.max:
		return stallFail, fmt.Sprintf("%s after %d restarts of every pod (--max-restarts=%d)", why, g.attempt, g.max)
	case g.anyTrainerEnded():
		return stallFail, why + "; not restarting every pod: a trainer of the job has ended"
	}
	return stallRestart, why
}

// hungExitCode is the launcher's exit code when it gives up on a silent
// trainer, as timeout(1) exits when its command ran out of time.
const hungExitCode = 124

// watchGroup, at each poll, restarts this pod's processes when any pod asked
// for it, asks for it when this pod's trainer is silent too long, or fails
// the launch when no restart may help. It reports whether it restarted.
func (r *running) watchGroup(ctx context.Context) (bool, error) {
	g := r.s.restarts
	if !g.requested() {
		if r.trainer == nil || r.trainer.exited() || r.forwarded {
			return false, nil
		}
		action, why := g.onSilence(r.trainer.silentFor(time.Now()))
		switch action {
		case stallNone:
			return false, nil
		case stallFail:
			fmt.Fprintf(r.s.log, "paddlejob launch: %s; stopping\n", why)
			r.stopAll()
			return false, &ExitError{Code: hungExitCode, Reason: why}
		}
		if err := g.request(why); err != nil {
			r.stopAll()
			return false, fmt.Errorf("asking the other pods to restart: %w", err)
		}
	}
	return true, r.restartAll(ctx)
}

// restartAll stops this pod's pserver and trainer, waits until every pod
// has, and starts the pserver again; the trainer follows once every pserver
// listens. The last attempt's logs are kept as server.<n>.log and
// train.<n>.log.
func (r *running) restartAll(ctx context.Context) error {
	g, s := r.s.restarts, r.s
	why, _ := os.ReadFile(filepath.Join(g.attemptDir(g.attempt+1), "requested"))
	fmt.Fprintf(s.log, "paddlejob launch: restarting the pserver and trainer of every pod (restart %d of at most %d): %s", g.attempt+1, g.max, why)
	r.stopAll()
	for _, spec := range []*processSpec{s.pserver, &s.trainer} {
		ext := filepath.Ext(spec.logPath)
		kept := strings.TrimSuffix(spec.logPath, ext) + "." + strconv.Itoa(g.attempt) + ext
		if err := os.Rename(spec.logPath, kept); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("keeping the %s's log: %w", spec.role, err)
		}
	}
	if err := g.markStopped(); err != nil {
		return fmt.Errorf("telling the other pods this one stopped: %w", err)
	}
	if err := r.waitAllStopped(ctx); err != nil {
		return err
	}
	g.attempt++
	r.trainer = nil
	p, err := startProcess(*s.pserver)
	if err != nil {
		return err
	}
	r.pserver = p
	return nil
}

// waitAllStopped waits until every pod stopped its processes, at most
// g.wait, ending early on a signal or ctx.
func (r *running) waitAllStopped(ctx context.Context) error {
	g, s := r.s.restarts, r.s
	deadline := time.After(g.wait)
	poll := time.NewTicker(s.pollInterval)
	defer poll.Stop()
	for !g.allStopped() {
		select {
		case <-poll.C:
		case <-deadline:
			return fmt.Errorf("restart %d: not every pod stopped its processes within %s; see %s", g.attempt+1, g.wait, g.attemptDir(g.attempt+1))
		case sig := <-s.signals:
			code := 128 + int(syscall.SIGTERM)
			if ss, ok := sig.(syscall.Signal); ok {
				code = 128 + int(ss)
			}
			return &ExitError{Code: code, Reason: fmt.Sprintf("interrupted by %s while restarting", sig)}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
