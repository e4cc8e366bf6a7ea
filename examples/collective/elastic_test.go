package collective

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/examples/collective/membershiptest"
	"github.com/paddlejob/paddlejob/examples/ctr"
)

func TestElasticWorkerIsReplaced(t *testing.T) {
	tests := []struct {
		name   string
		victim int
		// newEndpoint: the replacement comes back at a new address (PodIP
		// intranet) and the membership changes; else at the same one
		// (Service intranet) and the membership stays as it is.
		newEndpoint  bool
		restartAfter time.Duration
	}{
		{"coordinator, same endpoint", 0, false, 300 * time.Millisecond},
		{"last worker, same endpoint", 2, false, 0},
		{"middle worker, new endpoint", 1, true, 0},
		{"coordinator, new endpoint", 0, true, 300 * time.Millisecond},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, 50*time.Millisecond)
			endpoints := freeEndpoints(t, 170+10*i, 4)
			members := endpoints[:3]
			c.publish(members...)
			workers := make([]*elasticWorker, 3)
			for i, ep := range members {
				workers[i] = c.start(fmt.Sprintf("worker-%d", i), ep)
			}
			c.waitFor("the first checkpoint", c.checkpointed(0))
			victim := workers[tt.victim]
			victim.kill()
			time.Sleep(tt.restartAfter)
			replacement := victim.endpoint
			if tt.newEndpoint {
				replacement = endpoints[3]
				members = append([]string(nil), members...)
				members[tt.victim] = replacement
				c.publish(members...)
			}
			c.start(fmt.Sprintf("worker-%d-again", tt.victim), replacement)
			res := c.finish(victim)
			checkAUC(t, res, 3)
			if lines := c.epochLines(); lines[len(lines)-1].epoch < 2 {
				t.Errorf("the job never formed a second epoch")
			}
			// Same ranks, same shards, resumed from an exact checkpoint:
			// the very model of the undisturbed run.
			if got, want := c.finalFingerprint(), undisturbed(t, 3, c.plan.Passes).final; got != want {
				t.Errorf("final state %016x, undisturbed run's %016x", got, want)
			}
		})
	}
}

func TestElasticScaling(t *testing.T) {
	c := newCluster(t, 300*time.Millisecond)
	c.plan.Passes = 6
	endpoints := freeEndpoints(t, 210, 4)
	c.publish(endpoints[:2]...)
	var workers []*elasticWorker
	for i, ep := range endpoints[:2] {
		workers = append(workers, c.start(fmt.Sprintf("worker-%d", i), ep))
	}
	c.waitFor("the first checkpoint", c.checkpointed(0))

	c.publish(endpoints...)
	for i, ep := range endpoints[2:] {
		workers = append(workers, c.start(fmt.Sprintf("worker-%d", i+2), ep))
	}
	c.waitFor("an epoch of 4 workers", func() bool { return c.lastEpochSize() == 4 })
	lines := c.epochLines()
	c.waitFor("a pass of 4 workers", c.checkpointed(lines[len(lines)-1].firstPass()))

	// Scaling down removes the highest index: it leaves by itself, seeing
	// the new membership.
	c.publish(endpoints[:3]...)
	select {
	case <-workers[3].done:
	case <-time.After(30 * time.Second):
		t.Fatal("worker 3 did not leave")
	}
	if workers[3].err != nil || workers[3].result != nil {
		t.Errorf("worker 3 left with %v, %v; want nothing", workers[3].result, workers[3].err)
	}
	if !strings.Contains(c.logs.String(), "worker-3: "+endpoints[3]+" is not in the job's membership") {
		t.Errorf("worker 3 did not say why it left")
	}
	res := c.finish()
	if size := c.lastEpochSize(); size != 3 {
		t.Errorf("the last epoch had %d workers, want 3", size)
	}
	checkAUC(t, res, 2)
}

func TestElasticEpochStartsFromTheCheckpoint(t *testing.T) {
	c := newCluster(t, 300*time.Millisecond)
	c.plan.Passes = 3
	endpoints := freeEndpoints(t, 220, 3)
	c.publish(endpoints[:2]...)
	for i, ep := range endpoints[:2] {
		c.start(fmt.Sprintf("worker-%d", i), ep)
	}
	c.waitFor("the first checkpoint", c.checkpointed(0))
	c.publish(endpoints...)
	c.start("worker-2", endpoints[2])
	c.finish()

	var joined []epochLine
	for _, l := range c.epochLines() {
		if l.size == 3 {
			joined = append(joined, l)
		}
	}
	if len(joined) != 3 {
		t.Fatalf("%d workers logged the start of an epoch of 3, want 3", len(joined))
	}
	ck, err := ctr.LoadCheckpoint(ctr.PassDir(c.out, joined[0].firstPass()-1))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%016x", ck.State.Fingerprint()); joined[0].state != want {
		t.Errorf("the epoch of 3 starts from state %s, its checkpoint of pass %d has %s", joined[0].state, ck.Pass+1, want)
	}
}

func TestElasticWorkerOutsideTheMembershipLeaves(t *testing.T) {
	c := newCluster(t, 0)
	endpoints := freeEndpoints(t, 230, 3)
	c.publish(endpoints[:2]...)
	w := c.start("stranger", endpoints[2])
	<-w.done
	if w.err != nil || w.result != nil {
		t.Fatalf("returned %v, %v; want nothing", w.result, w.err)
	}
	if want := "stranger: " + endpoints[2] + " is not in the job's membership"; !strings.Contains(c.logs.String(), want) {
		t.Errorf("logs lack %q:\n%s", want, c.logs.String())
	}
}

func TestElasticWorkerArrivingAsTheJobEndsLeaves(t *testing.T) {
	tests := []struct {
		name string
		// coordinatorGone: the late worker's membership names a
		// coordinator that is not there, so only the final checkpoint
		// tells it the job is over. Else the coordinator, busy training,
		// never sees the late worker's membership and answers its queued
		// join when the job ends.
		coordinatorGone bool
	}{
		{"told by the coordinator", false},
		{"sees the final checkpoint", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, 100*time.Millisecond)
			endpoints := freeEndpoints(t, 2+4*i, 4)
			c.publish(endpoints[:2]...)
			for i, ep := range endpoints[:2] {
				c.start(fmt.Sprintf("worker-%d", i), ep)
			}
			c.waitFor("the first checkpoint", c.checkpointed(0))
			late := MembershipDir(filepath.Join(t.TempDir(), "late"))
			coordinator := endpoints[0]
			if tt.coordinatorGone {
				coordinator = endpoints[3]
			}
			if err := membershiptest.Publish(string(late), "late", []string{coordinator, endpoints[1], endpoints[2]}); err != nil {
				t.Fatal(err)
			}
			w := c.startWith("late", endpoints[2], late)
			c.finish()
			if w.err != nil || w.result != nil {
				t.Errorf("the late worker returned %v, %v; want nothing", w.result, w.err)
			}
			if want := "late: the job is finished before " + endpoints[2] + " could join: leaving"; !strings.Contains(c.logs.String(), want) {
				t.Errorf("logs lack %q", want)
			}
		})
	}
}

func TestElasticRendezvousTimeoutNamesTheMissing(t *testing.T) {
	tests := []struct {
		name    string
		members int
		started []int
		// wantErr, by started worker, with %s for endpoint i.
		wantErr map[int]string
	}{
		{"a member never comes", 2, []int{0}, map[int]string{
			0: "rendezvous: gave up after 1s waiting for %[2]s to join",
		}},
		{"the coordinator never comes", 2, []int{1}, map[int]string{
			1: "rendezvous: gave up after 1s waiting for coordinator %[1]s, unreachable",
		}},
		{"the last of three never comes", 3, []int{0, 1}, map[int]string{
			0: "waiting for %[3]s to join",
			1: "%[3]s",
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t, 0)
			c.timeout = time.Second
			endpoints := freeEndpoints(t, 235+5*i, tt.members)
			c.publish(endpoints...)
			args := make([]any, len(endpoints))
			for i, ep := range endpoints {
				args[i] = ep
			}
			for _, i := range tt.started {
				w := c.start(fmt.Sprintf("worker-%d", i), endpoints[i])
				defer func() {
					<-w.done
					want := fmt.Sprintf(tt.wantErr[i], args...)
					if w.err == nil || !strings.Contains(w.err.Error(), want) {
						t.Errorf("worker %d: error %v, want %q", i, w.err, want)
					}
				}()
			}
		})
	}
}

func TestMembershipChangeStopsEveryRankAtTheSameStep(t *testing.T) {
	c := newCluster(t, 300*time.Millisecond)
	endpoints := freeEndpoints(t, 250, 3)
	c.publish(endpoints...)
	for i, ep := range endpoints {
		c.start(fmt.Sprintf("worker-%d", i), ep)
	}
	c.waitFor("the first checkpoint", c.checkpointed(0))
	c.publish(endpoints...) // same workers, new version: a new epoch
	c.finish()
	stopped := regexp.MustCompile(`(?m)worker-\d: epoch 1 ends: (pass \d+ step \d+): the membership changed$`).FindAllStringSubmatch(c.logs.String(), -1)
	if len(stopped) != 3 {
		t.Fatalf("%d workers ended epoch 1 on the membership change, want 3", len(stopped))
	}
	for _, m := range stopped[1:] {
		if m[1] != stopped[0][1] {
			t.Errorf("workers stopped at %s and %s", stopped[0][1], m[1])
		}
	}
}
