package serviceproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// DefaultCIDR is the cluster IPs the node serves by default: loopback
// addresses, the only ones that are surely this machine's.
const DefaultCIDR = "127.0.0.0/8"

const (
	// serviceDialTimeout bounds a connection attempt to one backend.
	serviceDialTimeout = 3 * time.Second
	// serviceRetryInterval is how soon a listener that could not be opened
	// (its address in use, say) is tried again.
	serviceRetryInterval = 2 * time.Second
)

// CIDRs is the set of cluster IPs the node serves.
type CIDRs []netip.Prefix

// ParseCIDRs parses a comma-separated list of CIDRs.
func ParseCIDRs(s string) (CIDRs, error) {
	var out CIDRs
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("service CIDR %q: %w", f, err)
		}
		out = append(out, p.Masked())
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("service CIDR %q names no range", s)
	}
	return out, nil
}

// contains reports whether ip, a textual address, lies in one of the ranges.
func (c CIDRs) Contains(ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range c {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// serviceTarget is what one listener forwards to: a port of a Service.
type serviceTarget struct {
	// service is namespace/name.
	service   string
	namespace string
	selector  labels.Selector
	port      corev1.ServicePort
	// publishNotReady admits pods that are not Ready, as
	// spec.publishNotReadyAddresses does for endpoints.
	publishNotReady bool
}

// serviceNote says why a Service's port gets no listener. verbose notes are
// logged at V(1) only.
type serviceNote struct {
	service, port, reason string
	verbose               bool
}

func (n serviceNote) key() string { return n.service + "|" + n.port + "|" + n.reason }

// serviceListeners works out the listeners the Services call for, by address
// (clusterIP:port): one per TCP port of each cluster IP that eligible
// accepts, for Services of type ClusterIP, NodePort and LoadBalancer that
// have a selector. notes say which ports are left out and why, when that is
// worth saying.
func serviceListeners(services []*corev1.Service, eligible func(ip string) bool) (map[string]*serviceTarget, []serviceNote) {
	sorted := append([]*corev1.Service(nil), services...)
	sort.Slice(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	want := map[string]*serviceTarget{}
	var notes []serviceNote
	for _, svc := range sorted {
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 && svc.Spec.ClusterIP != "" {
			ips = []string{svc.Spec.ClusterIP}
		}
		var ours []string
		for _, ip := range ips {
			// Headless Services ("None") have no address to serve; others are
			// on a network this node is not part of.
			if ip != "" && ip != corev1.ClusterIPNone && eligible(ip) {
				ours = append(ours, ip)
			}
		}
		if len(ours) == 0 {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		if len(svc.Spec.Selector) == 0 {
			notes = append(notes, serviceNote{service: key, reason: "no selector: its endpoints are managed by hand, the node does not know them", verbose: true})
			continue
		}
		selector := labels.SelectorFromSet(svc.Spec.Selector)
		for _, sp := range svc.Spec.Ports {
			portName := sp.Name
			if portName == "" {
				portName = strconv.Itoa(int(sp.Port))
			}
			if proto := protocolOf(sp.Protocol); proto != corev1.ProtocolTCP {
				notes = append(notes, serviceNote{service: key, port: portName, reason: string(proto) + " is not proxied"})
				continue
			}
			for _, ip := range ours {
				addr := net.JoinHostPort(ip, strconv.Itoa(int(sp.Port)))
				if other, taken := want[addr]; taken {
					notes = append(notes, serviceNote{service: key, port: portName, reason: addr + " is taken by Service " + other.service})
					continue
				}
				want[addr] = &serviceTarget{
					service:         key,
					namespace:       svc.Namespace,
					selector:        selector,
					port:            sp,
					publishNotReady: svc.Spec.PublishNotReadyAddresses,
				}
			}
		}
	}
	return want, notes
}

func protocolOf(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// serviceBackend is a pod that serves a Service's port.
type serviceBackend struct {
	pod  string // namespace/name
	addr string // podIP:targetPort
}

// serviceBackends picks the pods that serve a target: pods of its namespace
// that its selector matches, running, Ready (unless publishNotReady), not
// being deleted, with an IP and the target port. They are sorted by name, the
// order round-robin follows.
func serviceBackends(pods []*corev1.Pod, t *serviceTarget) []serviceBackend {
	var out []serviceBackend
	for _, pod := range pods {
		if pod.Namespace != t.namespace || !t.selector.Matches(labels.Set(pod.Labels)) || !podServes(pod, t.publishNotReady) {
			continue
		}
		port, ok := targetPort(pod, t.port)
		if !ok {
			continue
		}
		out = append(out, serviceBackend{pod: pod.Namespace + "/" + pod.Name, addr: net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port)))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pod < out[j].pod })
	return out
}

// podServes reports whether a pod can take a Service's connections.
func podServes(pod *corev1.Pod, evenUnready bool) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return false
	}
	if evenUnready {
		return true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// targetPort is the pod's port a Service port forwards to: targetPort's
// number, or the TCP container port of targetPort's name, or else the
// Service port itself. ok is false when the pod has no port of that name.
func targetPort(pod *corev1.Pod, sp corev1.ServicePort) (port int32, ok bool) {
	tp := sp.TargetPort
	switch {
	case tp.Type == intstr.String && tp.StrVal != "":
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == tp.StrVal && protocolOf(cp.Protocol) == protocolOf(sp.Protocol) {
					return cp.ContainerPort, true
				}
			}
		}
		return 0, false
	case tp.Type == intstr.Int && tp.IntVal != 0:
		return tp.IntVal, true
	}
	return sp.Port, true
}

// Proxy keeps a listener open for every Service port the node serves
// and forwards their connections.
type Proxy struct {
	log      logr.Logger
	services corev1listers.ServiceLister
	pods     corev1listers.PodLister
	eligible func(ip string) bool
	dialer   net.Dialer
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

// New makes a proxy for the Services the lister holds whose cluster IPs
// eligible accepts, forwarding to the pods the pod lister holds (the node's).
// It does nothing until Start; Handler keeps it up to date.
func New(log logr.Logger, services corev1listers.ServiceLister, pods corev1listers.PodLister, eligible func(ip string) bool) *Proxy {
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{
		log:       log.WithName("services"),
		services:  services,
		pods:      pods,
		eligible:  eligible,
		dialer:    net.Dialer{Timeout: serviceDialTimeout},
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

// Start runs the proxy until Stop.
func (p *Proxy) Start() {
	go func() {
		defer close(p.done)
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
		ln, err := net.Listen("tcp", addr)
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
	pipe(client, backend)
}

// connect dials the target's backends in round-robin order until one
// answers.
func (p *Proxy) connect(l *serviceListener, t *serviceTarget) (net.Conn, error) {
	pods, err := p.pods.Pods(t.namespace).List(t.selector)
	if err != nil {
		return nil, err
	}
	backends := serviceBackends(pods, t)
	if len(backends) == 0 {
		return nil, errors.New("no ready pod of the Service on this node")
	}
	start := l.next.Add(1) - 1
	var errs []error
	for i := range backends {
		b := backends[(start+uint64(i))%uint64(len(backends))]
		c, err := p.dialer.DialContext(p.ctx, "tcp", b.addr)
		if err == nil {
			return c, nil
		}
		p.log.V(1).Info("Service backend unreachable", "service", t.service, "pod", b.pod, "address", b.addr, "reason", err.Error())
		errs = append(errs, fmt.Errorf("pod %s: %w", b.pod, err))
	}
	return nil, errors.Join(errs...)
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

// pipe copies bytes both ways until both sides are done. When one side ends
// its stream the other's write side is shut (half-close), so protocols that
// signal the end of a request with EOF work; a failed read or write aborts
// both connections.
func pipe(a, b net.Conn) {
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
