package podnetwork

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// The attachment protocol, over one Unix stream connection per node: the
// node sends a hello, one JSON line {"nodeIP": "..."} carrying its uplink's
// file descriptor (SCM_RIGHTS); the cluster network answers one JSON line,
// {"ok": true} or {"error": "..."}. Then the connection stays open, and the
// cluster network routes to the node for as long as it does.

type hello struct {
	NodeIP netip.Addr `json:"nodeIP"`
}

type reply struct {
	OK    bool   `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
}

// maxLine bounds a hello or a reply.
const maxLine = 1024

// helloTimeout bounds the exchange of hello and reply, so that a stuck
// peer holds no attachment.
const helloTimeout = 5 * time.Second

func encodeHello(ip netip.Addr) []byte {
	b, _ := json.Marshal(hello{NodeIP: ip})
	return append(b, '\n')
}

func decodeHello(line []byte) (netip.Addr, error) {
	var h hello
	if err := json.Unmarshal(line, &h); err != nil {
		return netip.Addr{}, fmt.Errorf("hello %q: want a JSON line such as {\"nodeIP\": \"172.18.0.2\"}: %w", bytes.TrimSpace(line), err)
	}
	if !h.NodeIP.Is4() {
		return netip.Addr{}, fmt.Errorf("hello %q: nodeIP: want an IPv4 address", bytes.TrimSpace(line))
	}
	return h.NodeIP, nil
}

func encodeReply(err error) []byte {
	r := reply{OK: true}
	if err != nil {
		r = reply{Error: err.Error()}
	}
	b, _ := json.Marshal(r)
	return append(b, '\n')
}

func decodeReply(line []byte) error {
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("the cluster network's reply %q: %w", bytes.TrimSpace(line), err)
	}
	if !r.OK {
		return fmt.Errorf("the cluster network refused the attachment: %s", r.Error)
	}
	return nil
}

// Serve accepts nodes' attachments on ln (a Unix socket's listener) until
// ln is closed, then returns nil.
func (c *ClusterNetwork) Serve(ln net.Listener) error {
	for {
		conn, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("accepting nodes' attachments: %w", err)
		}
		go c.serveNode(conn)
	}
}

// serveNode attaches the node that conn comes from and holds the
// attachment until the connection ends.
func (c *ClusterNetwork) serveNode(conn net.Conn) {
	_ = conn.SetDeadline(time.Now().Add(helloTimeout))
	i, u, err := c.receiveNode(conn)
	if err == nil {
		err = c.attach(i, u)
		if err != nil {
			u.file.Close()
		}
	}
	if _, werr := conn.Write(encodeReply(err)); err == nil && werr != nil {
		c.detach(i, u)
		return
	}
	if err != nil {
		conn.Close()
		return
	}
	_ = conn.SetDeadline(time.Time{})
	_, _ = io.Copy(io.Discard, conn) // until the node's side closes or Close closes it
	c.detach(i, u)
}

// receiveNode reads the hello and the uplink it carries.
func (c *ClusterNetwork) receiveNode(conn net.Conn) (port, *uplink, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return dropPort, nil, fmt.Errorf("attachments come over a Unix socket, not %s", conn.LocalAddr().Network())
	}
	line, fds, err := readHello(uc)
	var file *os.File
	var refused error
	for _, fd := range fds {
		if file != nil {
			unix.Close(fd)
			continue
		}
		if refused = checkUplinkSocket(fd); refused == nil {
			refused = unix.SetNonblock(fd, true)
		}
		if refused == nil {
			file = os.NewFile(uintptr(fd), "uplink")
		} else {
			unix.Close(fd)
		}
	}
	ip, derr := decodeHello(line)
	err = errors.Join(err, derr)
	i := c.nodeIndex(ip)
	switch {
	case err != nil:
	case file == nil && refused != nil:
		err = fmt.Errorf("the hello's descriptor is no uplink: %w", refused)
	case file == nil:
		err = errors.New("the hello carried no uplink descriptor")
	case i == dropPort:
		err = fmt.Errorf("node IP %s is not one of the cluster's nodes %v", ip, c.nodeIPs())
	}
	if err != nil {
		if file != nil {
			file.Close()
		}
		return dropPort, nil, err
	}
	return i, &uplink{file: file, conn: conn}, nil
}

// readHello reads up to the hello's newline, gathering the descriptors
// sent along (the kernel delivers them with the first byte).
func readHello(c *net.UnixConn) (line []byte, fds []int, err error) {
	buf := make([]byte, maxLine)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for !bytes.HasSuffix(line, []byte("\n")) {
		if len(line) >= maxLine {
			return line, fds, fmt.Errorf("hello longer than %d bytes", maxLine)
		}
		n, oobn, _, _, rerr := c.ReadMsgUnix(buf[:maxLine-len(line)], oob)
		line = append(line, buf[:n]...)
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, m := range msgs {
				if rights, rerr := unix.ParseUnixRights(&m); rerr == nil {
					fds = append(fds, rights...)
				}
			}
		}
		if rerr != nil {
			return line, fds, fmt.Errorf("reading the hello: %w", rerr)
		}
	}
	return line, fds, nil
}

func (c *ClusterNetwork) nodeIPs() []netip.Addr {
	ips := make([]netip.Addr, len(c.cfg.Nodes))
	for i, n := range c.cfg.Nodes {
		ips[i] = n.IP
	}
	return ips
}

// Backoff between a node's attempts to attach: short, as the cluster
// network restarts in well under a second, and capped, so a node finds it
// soon after however long it was away.
const (
	attachBackoffMin = 50 * time.Millisecond
	attachBackoffMax = time.Second
)

// AttachNode keeps the node attached to the cluster network serving socket
// until ctx ends: it connects, sends nodeIP and uplink's descriptor, and
// holds the connection; when the connection ends (the cluster network
// restarted) it connects again, backing off from attachBackoffMin doubling
// to attachBackoffMax. Errors go to log; the first of a run of failures as
// an error, the rest at V(1).
func AttachNode(ctx context.Context, socket string, nodeIP netip.Addr, uplink *os.File, log logr.Logger) {
	log = log.WithValues("socket", socket, "nodeIP", nodeIP)
	delay := attachBackoffMin
	failing := false
	for ctx.Err() == nil {
		conn, err := attachOnce(ctx, socket, nodeIP, uplink)
		switch {
		case err == nil:
			log.Info("attached to the cluster network")
			delay, failing = attachBackoffMin, false
			holdAttachment(ctx, conn)
			if ctx.Err() == nil {
				log.Info("the cluster network ended the attachment; attaching again")
			}
		case ctx.Err() != nil:
		case !failing:
			log.Error(err, "attaching to the cluster network; retrying")
			failing = true
		default:
			log.V(1).Info("attaching to the cluster network failed again", "error", err.Error())
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, attachBackoffMax)
	}
}

// attachOnce connects, sends the hello with the uplink and reads the
// reply: the connection returned is the attachment.
func attachOnce(ctx context.Context, socket string, nodeIP netip.Addr, uplink *os.File) (*net.UnixConn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, err
	}
	uc := conn.(*net.UnixConn)
	_ = uc.SetDeadline(time.Now().Add(helloTimeout))
	rc, err := uplink.SyscallConn()
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("the uplink's descriptor: %w", err)
	}
	var werr error
	if err := rc.Control(func(fd uintptr) {
		_, _, werr = uc.WriteMsgUnix(encodeHello(nodeIP), unix.UnixRights(int(fd)), nil)
	}); err != nil || werr != nil {
		uc.Close()
		return nil, fmt.Errorf("sending the hello: %w", errors.Join(err, werr))
	}
	line, err := bufio.NewReaderSize(io.LimitReader(uc, maxLine), maxLine).ReadBytes('\n')
	if err == nil {
		err = decodeReply(line)
	}
	if err != nil {
		uc.Close()
		return nil, err
	}
	_ = uc.SetDeadline(time.Time{})
	return uc, nil
}

// holdAttachment returns when the cluster network closes conn or ctx ends;
// either way conn is closed. The cluster network sends nothing after its
// reply.
func holdAttachment(ctx context.Context, conn *net.UnixConn) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_, _ = io.Copy(io.Discard, conn)
	conn.Close()
}
