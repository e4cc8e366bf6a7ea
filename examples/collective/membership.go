package collective

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/paddlejob/paddlejob/examples/ctr/endpoint"
)

// Membership is the job's list of workers as the operator published it at
// one moment.
type Membership struct {
	// Version names this publication; "" when the operator wrote none.
	Version string
	// Endpoints is every worker's host:port, in index order. A worker's
	// rank is the position of its own endpoint.
	Endpoints []string
}

// Rank is the position of self in the list, or -1 when self is not a member.
func (m Membership) Rank(self string) int { return endpoint.Index(m.Endpoints, self) }

// Equal reports whether two readings publish the same membership.
func (m Membership) Equal(o Membership) bool {
	return m.Version == o.Version && slices.Equal(m.Endpoints, o.Endpoints)
}

func (m Membership) String() string {
	return fmt.Sprintf("version %q: %s", m.Version, strings.Join(m.Endpoints, ","))
}

// The files of a membership directory. Others (PADDLE_TRAINERS_NUM, ...)
// follow from these and are not read.
const (
	endpointsFile = "PADDLE_TRAINER_ENDPOINTS"
	versionFile   = "version"
	// dataLink is the symlink a projected volume swaps to publish a new set
	// of files at once; the visible files are symlinks through it.
	dataLink = "..data"
)

// MembershipDir is a directory where the operator keeps the membership
// current: one file per job-wide variable, replaced all at once whenever
// workers come or go.
type MembershipDir string

// readAttempts bounds the retries of a read that raced with a swap.
const readAttempts = 10

// Read returns the published membership. When the files are swapped in
// through ..data, it reads them from the directory ..data points to and
// checks that the link did not move meanwhile, so the version and the list
// always belong together.
func (d MembershipDir) Read() (Membership, error) {
	var lastErr error
	for range readAttempts {
		link, err := os.Readlink(filepath.Join(string(d), dataLink))
		if errors.Is(err, os.ErrNotExist) {
			return readMembership(string(d)) // plain files, written in place
		}
		if err != nil {
			return Membership{}, fmt.Errorf("membership: %w", err)
		}
		payload := link
		if !filepath.IsAbs(payload) {
			payload = filepath.Join(string(d), payload)
		}
		m, err := readMembership(payload)
		if after, _ := os.Readlink(filepath.Join(string(d), dataLink)); err == nil && after == link {
			return m, nil
		}
		lastErr = err // swapped while read: read again
	}
	return Membership{}, fmt.Errorf("membership in %s keeps changing while read: %v", d, lastErr)
}

func readMembership(dir string) (Membership, error) {
	list, err := os.ReadFile(filepath.Join(dir, endpointsFile))
	if err != nil {
		return Membership{}, fmt.Errorf("membership: %w", err)
	}
	version, err := os.ReadFile(filepath.Join(dir, versionFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Membership{}, fmt.Errorf("membership: %w", err)
	}
	return Membership{
		Version:   strings.TrimSpace(string(version)),
		Endpoints: endpoint.SplitList(string(list)),
	}, nil
}

// membershipWatch tells when the published membership differs from the one
// an epoch started with. It reads it at most once per interval, so asking
// at every step costs nothing.
type membershipWatch struct {
	dir      MembershipDir
	baseline Membership
	every    time.Duration
	log      *log.Logger
	next     time.Time
	seen     bool   // a change was seen: the epoch is over
	failure  string // the last read error logged
}

func (w *membershipWatch) changed() bool {
	if w.seen {
		return true
	}
	now := time.Now()
	if now.Before(w.next) {
		return false
	}
	w.next = now.Add(w.every)
	m, err := w.dir.Read()
	if err != nil {
		if err.Error() != w.failure { // log a lasting failure once
			w.log.Printf("keeping the epoch's membership: %v", err)
			w.failure = err.Error()
		}
		return false
	}
	w.failure = ""
	if !m.Equal(w.baseline) {
		w.log.Printf("membership changed from version %q to %q: ending the epoch", w.baseline.Version, m.Version)
		w.seen = true
	}
	return w.seen
}
