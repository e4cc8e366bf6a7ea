package serviceproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

const (
	// serviceDialTimeout bounds a connection attempt to one backend.
	serviceDialTimeout = 3 * time.Second
	// serviceRetryInterval is how soon a listener that could not be opened
	// (its address in use, say) is tried again.
	serviceRetryInterval = 2 * time.Second
)

// Proxy keeps a listener open for every Service port the node serves
// and forwards their connections.
type Proxy struct {
	log       logr.Logger
	services  corev1listers.ServiceLister
	endpoints discoverylisters.EndpointSliceLister
	synced    cache.InformerSynced
	eligible  func(ip string) bool
	network   Network
	// kick asks for the listeners to be brought up to date.
	kick chan struct{}
	// ctx ends when the proxy stops; connection attempts use it.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	stopped   bool
	listeners map[string]*serviceListener
	// failed holds the last error of listeners that could not be opened,
	// so that each is logged once.
	failed map[string]string
	// noted holds the notes already logged.
	noted map[string]bool
	conns map[net.Conn]struct{}
	// wg counts accept loops and connections.
	wg sync.WaitGroup
}

// serviceListener is the listener of one clusterIP:port.
type serviceListener struct {
	addr   string
	ln     net.Listener
	target atomic.Pointer[serviceTarget]
	// next is the round-robin counter.
	next atomic.Uint64
}

// Config is what a Proxy works from.
type Config struct {
	Log logr.Logger
	// Services and EndpointSlices are the informers' listers: listeners
	// follow the Services (through Handler), and each connection reads the
	// EndpointSlices when it arrives.
	Services       corev1listers.ServiceLister
	EndpointSlices discoverylisters.EndpointSliceLister
	// Synced reports whether both informers have synced; no listener opens
	// before, since a connection accepted earlier would find no endpoint.
	Synced cache.InformerSynced
	// Eligible accepts the cluster IPs this proxy serves.
	Eligible func(ip string) bool
	// Network is where the proxy listens and dials: the node's network
	// namespace.
	Network Network
}

// New makes a proxy for the Services whose cluster IPs cfg.Eligible
// accepts, forwarding to the endpoints of their EndpointSlices. It does
// nothing until Start; Handler keeps its listeners up to date.
func New(cfg Config) *Proxy {
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{
		log:       cfg.Log.WithName("services"),
		services:  cfg.Services,
		endpoints: cfg.EndpointSlices,
		synced:    cfg.Synced,
		eligible:  cfg.Eligible,
		network:   cfg.Network,
		kick:      make(chan struct{}, 1),
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		listeners: map[string]*serviceListener{},
		failed:    map[string]string{},
		noted:     map[string]bool{},
		conns:     map[net.Conn]struct{}{},
	}
}

// Handler is the Service informer's event handler: any change brings the
// listeners up to date.
func (p *Proxy) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.trigger() },
		UpdateFunc: func(_, _ any) { p.trigger() },
		DeleteFunc: func(any) { p.trigger() },
	}
}

func (p *Proxy) trigger() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Start runs the proxy until Stop; listeners open once the informers have
// synced.
func (p *Proxy) Start() {
	go func() {
		defer close(p.done)
		if !cache.WaitForCacheSync(p.ctx.Done(), p.synced) {
			return
		}
		var retry <-chan time.Time
		for {
			select {
			case <-p.ctx.Done():
				return
			case <-p.kick:
			case <-retry:
			}
			retry = nil
			if !p.sync() {
				retry = time.After(serviceRetryInterval)
			}
		}
	}()
}

// Stop closes every listener and connection and waits for their goroutines.
func (p *Proxy) Stop() {
	p.cancel()
	<-p.done
	p.mu.Lock()
	p.stopped = true
	for _, l := range p.listeners {
		p.closeListenerLocked(l, "node stopping")
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// sync opens and closes listeners to match the Services. It reports false
// when some listener could not be opened and should be tried again.
func (p *Proxy) sync() bool {
	services, err := p.services.List(labels.Everything())
	if err != nil {
		p.log.Error(err, "Cannot list Services")
		return false
	}
	want, notes := serviceListeners(services, p.eligible)
	p.logNotes(notes)

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return true
	}
	for addr, l := range p.listeners {
		t, ok := want[addr]
		switch {
		case !ok:
			p.closeListenerLocked(l, "Service gone or changed")
		case t.service != l.target.Load().service:
			// The address now belongs to another Service: reopen, so the
			// logs tell the two apart.
			p.closeListenerLocked(l, "address reassigned")
		default:
			l.target.Store(t)
		}
	}
	ok := true
	for addr, t := range want {
		if _, open := p.listeners[addr]; open {
			continue
		}
		ln, err := p.network.Listen("tcp", addr)
		if err != nil {
			ok = false
			if p.failed[addr] != err.Error() {
				p.failed[addr] = err.Error()
				p.log.Error(err, "Cannot listen for Service; retrying", "service", t.service, "port", t.port.Name, "address", addr)
			}
			continue
		}
		delete(p.failed, addr)
		l := &serviceListener{addr: addr, ln: ln}
		l.target.Store(t)
		p.listeners[addr] = l
		p.log.Info("Service listener opened", "service", t.service, "port", t.port.Name, "address", addr, "targetPort", t.port.TargetPort.String())
		p.wg.Add(1)
		go p.serve(l)
	}
	for addr := range p.failed {
		if _, still := want[addr]; !still {
			delete(p.failed, addr)
		}
	}
	return ok
}

func (p *Proxy) closeListenerLocked(l *serviceListener, why string) {
	t := l.target.Load()
	l.ln.Close()
	delete(p.listeners, l.addr)
	p.log.Info("Service listener closed", "service", t.service, "port", t.port.Name, "address", l.addr, "reason", why)
}

// logNotes logs each note once while it holds.
func (p *Proxy) logNotes(notes []serviceNote) {
	p.mu.Lock()
	defer p.mu.Unlock()
	current := map[string]bool{}
	for _, n := range notes {
		k := n.key()
		current[k] = true
		if p.noted[k] {
			continue
		}
		log := p.log
		if n.verbose {
			log = log.V(1)
		}
		log.Info("Service port not proxied", "service", n.service, "port", n.port, "reason", n.reason)
	}
	p.noted = current
}

// serve accepts a listener's connections until it is closed.
func (p *Proxy) serve(l *serviceListener) {
	defer p.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, say: wait a little.
			p.log.Error(err, "Accepting a Service connection", "address", l.addr)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		p.wg.Add(1)
		go p.handle(l, c)
	}
}

// handle forwards one accepted connection to a backend, or resets it when
// there is none.
func (p *Proxy) handle(l *serviceListener, client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	t := l.target.Load()
	backend, err := p.connect(l, t)
	if err != nil {
		p.log.V(1).Info("Service connection dropped", "service", t.service, "port", t.port.Name, "address", l.addr, "client", client.RemoteAddr().String(), "reason", err.Error())
		// A reset tells the client at once that nothing serves the port.
		if tc, ok := client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		client.Close()
		return
	}
	if !p.track(backend) {
		return
	}
	defer p.untrack(backend)
	Pipe(client, backend)
}

// connect dials the target's backends in round-robin order until one
// answers.
func (p *Proxy) connect(l *serviceListener, t *serviceTarget) (net.Conn, error) {
	slices, err := p.endpoints.EndpointSlices(t.namespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: t.name}))
	if err != nil {
		return nil, err
	}
	backends := serviceBackends(slices, t)
	if len(backends) == 0 {
		return nil, errors.New("no ready endpoint in the Service's EndpointSlices")
	}
	start := l.next.Add(1) - 1
	var errs []error
	for i := range backends {
		b := backends[(start+uint64(i))%uint64(len(backends))]
		c, err := p.dial(b.addr)
		if err == nil {
			return c, nil
		}
		p.log.V(1).Info("Service backend unreachable", "service", t.service, "endpoint", b.name, "address", b.addr, "reason", err.Error())
		errs = append(errs, fmt.Errorf("endpoint %s: %w", b.name, err))
	}
	return nil, errors.Join(errs...)
}

// dial connects to one backend, giving up after serviceDialTimeout.
func (p *Proxy) dial(addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(p.ctx, serviceDialTimeout)
	defer cancel()
	return p.network.DialContext(ctx, "tcp", addr)
}

// track records an open connection, so that stop closes it; when the proxy
// has stopped it closes c and returns false.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// Pipe joins two connections, as a proxy joins a client to its backend: it
// copies bytes both ways until both sides are done, then closes both. When
// one side ends its stream the other's write side is shut (half-close), so
// protocols that signal the end of a request with EOF work; a failed read or
// write aborts both connections. The Service proxy uses it, and so do the
// node's forwards and the API server's egress.
func Pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		defer wg.Done()
		if _, err := io.Copy(dst, src); err != nil {
			a.Close()
			b.Close()
			return
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go half(b, a)
	go half(a, b)
	wg.Wait()
	a.Close()
	b.Close()
}
