package collective

import (
	"context"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddlejob/paddlejob/examples/internal/testlog"
)

// freeEndpoints returns n endpoints nothing listens on yet, on the loopback
// addresses 127.0.0.<firstHost>, 127.0.0.<firstHost+1>, ... as pods of a local
// cluster have.
func freeEndpoints(t *testing.T, firstHost, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:0", firstHost+i))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = ln.Addr().String()
		ln.Close()
	}
	return out
}

// connectRing connects n workers, each in its own goroutine.
func connectRing(t *testing.T, l *testlog.Buffer, endpoints []string) []*Ring {
	t.Helper()
	n := max(len(endpoints), 1)
	rings := make([]*Ring, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for rank := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rings[rank], errs[rank] = Connect(context.Background(), RingConfig{
				Endpoints: endpoints, Rank: rank, ConnectTimeout: 30 * time.Second,
				Log: l.Logger(fmt.Sprintf("rank-%d", rank)),
			})
		}()
	}
	wg.Wait()
	for rank, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v\n%s", rank, err, l)
		}
	}
	t.Cleanup(func() {
		for _, r := range rings {
			r.Close()
		}
	})
	return rings
}

func TestAllReduceSums(t *testing.T) {
	for workers := 1; workers <= 5; workers++ {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			var l testlog.Buffer
			var endpoints []string
			if workers > 1 {
				endpoints = freeEndpoints(t, 10*workers, workers)
			}
			rings := connectRing(t, &l, endpoints)
			// Lengths shorter than the ring leave some chunks empty.
			for _, length := range []int{0, 1, 3, 7, 1000, 100_003} {
				results := make([][]float64, workers)
				errs := make([]error, workers)
				var wg sync.WaitGroup
				for rank := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						data := make([]float64, length)
						for i := range data {
							data[i] = float64(rank+1)*0.1 + float64(i)
						}
						errs[rank] = rings[rank].AllReduce(data)
						results[rank] = data
					}()
				}
				wg.Wait()
				for rank, err := range errs {
					if err != nil {
						t.Fatalf("length %d, rank %d: %v", length, rank, err)
					}
				}
				for i := range length {
					want := 0.1*float64(workers*(workers+1)/2) + float64(workers*i)
					if got := results[0][i]; math.Abs(got-want) > 1e-9*math.Max(1, want) {
						t.Fatalf("length %d: value %d is %v, want %v", length, i, got, want)
					}
					for rank := 1; rank < workers; rank++ {
						if results[rank][i] != results[0][i] {
							t.Fatalf("length %d: value %d differs between rank 0 (%v) and rank %d (%v)", length, i, results[0][i], rank, results[rank][i])
						}
					}
				}
			}
		})
	}
}

func TestRingTurnsAwayStrangers(t *testing.T) {
	var l testlog.Buffer
	endpoints := freeEndpoints(t, 60, 2)
	connected := make(chan *Ring, 1)
	go func() {
		r, err := Connect(context.Background(), RingConfig{Endpoints: endpoints, Rank: 0, ConnectTimeout: 30 * time.Second, Log: l.Logger("rank-0")})
		if err != nil {
			t.Error(err)
		}
		connected <- r
	}()
	// A stranger reaches rank 0 before rank 1 does.
	var stranger net.Conn
	var err error
	for range 200 {
		if stranger, err = net.Dial("tcp", endpoints[0]); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	stranger.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	defer stranger.Close()

	r1, err := Connect(context.Background(), RingConfig{Endpoints: endpoints, Rank: 1, ConnectTimeout: 30 * time.Second, Log: l.Logger("rank-1")})
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r0 := <-connected
	defer r0.Close()
	if !strings.Contains(l.String(), "rank-0: turned away a connection") {
		t.Errorf("rank 0 did not report the stranger:\n%s", l.String())
	}
	a, b := []float64{1, 2}, []float64{10, 20}
	done := make(chan error, 1)
	go func() { done <- r0.AllReduce(a) }()
	if err := r1.AllReduce(b); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || a[0] != 11 || a[1] != 22 || b[0] != 11 || b[1] != 22 {
		t.Fatalf("all-reduce after the stranger: %v %v %v", a, b, err)
	}
}

func TestRingNamesTheMissingRank(t *testing.T) {
	var l testlog.Buffer
	endpoints := freeEndpoints(t, 70, 2)
	_, err := Connect(context.Background(), RingConfig{Endpoints: endpoints, Rank: 0, ConnectTimeout: 300 * time.Millisecond, Log: l.Logger("rank-0")})
	if err == nil || !strings.Contains(err.Error(), "rank 1 at "+endpoints[1]+" unreachable after 300ms") {
		t.Fatalf("error = %v", err)
	}
}
