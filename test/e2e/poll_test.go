package e2e

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// pollInterval is how often the tests look at the state they wait for.
const pollInterval = 250 * time.Millisecond

// waitFor polls cond until it holds or timeout passes, and returns cond's
// last word and whether it held. cond runs on the caller's goroutine, so it
// may fail the test.
func waitFor(timeout time.Duration, cond func() (bool, string)) (string, bool) {
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, timeout, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	return last, err == nil
}

// poll waits until cond holds, failing with its last word after timeout.
func poll(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	last, ok := waitFor(timeout, cond)
	if !ok {
		t.Fatalf("waiting %s for %s: %s", timeout, what, last)
	}
	t.Logf("%s: %s", what, last)
}
