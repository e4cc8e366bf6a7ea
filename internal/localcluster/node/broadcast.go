package node

import "sync"

// broadcaster wakes every waiter when something changes. A waiter takes the
// channel before looking at the state it waits on, so a change made after the
// look closes the channel it holds and is never missed.
type broadcaster struct {
	mu sync.Mutex
	ch chan struct{}
}

// changed returns a channel closed at the next notify.
func (b *broadcaster) changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *broadcaster) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}
