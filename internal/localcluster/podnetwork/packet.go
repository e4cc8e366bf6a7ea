package podnetwork

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// UplinkMTU is the MTU of the uplinks (eth0 and its wire), the cluster
// network's eth0, the bridge and the pods' veth pairs: near the largest a
// veth takes, so that a TCP stream crosses the userspace router in as few
// frames as it can.
const UplinkMTU = 65520

// WireLinkName is the other end of eth0's veth pair, in the same
// namespace: up, no address. The uplink's packet socket is bound to it, so
// what eth0 sends is read from the socket and what is written to the
// socket arrives on eth0.
const WireLinkName = "eth0-wire"

// ethHeaderLen is an Ethernet header's length: destination and source
// MACs, then the ethertype.
const ethHeaderLen = 14

// uplinkMAC is eth0's address on a node or the cluster network: 0a:59 and
// the IP's four bytes, so the router knows it from the IP alone.
func uplinkMAC(ip netip.Addr) net.HardwareAddr {
	b := ip.As4()
	return net.HardwareAddr{0x0a, 0x59, b[0], b[1], b[2], b[3]}
}

// routerMAC is the source of every frame the router writes.
var routerMAC = net.HardwareAddr{0x02, 0x70, 0x6a, 0x00, 0x00, 0x02}

// addUplink creates eth0 and its wire in ns, eth0 holding addr with its
// prefix length, NOARP, at UplinkMTU, and returns a packet socket bound to
// the wire. With NOARP the kernel addresses every frame to eth0's own MAC
// and needs no neighbour answering; the router rewrites the MACs. The
// socket's file is non-blocking, so reads go through Go's poller and
// Close unblocks them. The socket needs CAP_NET_RAW in ns's user namespace.
func addUplink(ns *Namespace, h *netlink.Handle, addr netip.Prefix) (*os.File, netlink.Link, error) {
	veth := &netlink.Veth{
		// Both ends take the MTU from LinkAttrs.
		LinkAttrs: netlink.LinkAttrs{Name: NodeLinkName, MTU: UplinkMTU, HardwareAddr: uplinkMAC(addr.Addr())},
		PeerName:  WireLinkName,
	}
	if err := h.LinkAdd(veth); err != nil {
		return nil, nil, fmt.Errorf("adding the veth pair %s/%s: %w", NodeLinkName, WireLinkName, err)
	}
	eth, err := setUpEth(ns, h, addr)
	if err != nil {
		return nil, nil, err
	}
	wire, err := h.LinkByName(WireLinkName)
	if err == nil {
		err = h.LinkSetUp(wire)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s up: %w", WireLinkName, err)
	}
	f, err := openPacketSocket(ns, wire.Attrs().Index)
	if err != nil {
		return nil, nil, err
	}
	return f, eth, nil
}

// setUpEth gives eth0 its address (which routes its prefix over it),
// NOARP and no transmit checksum offload, and brings it up.
func setUpEth(ns *Namespace, h *netlink.Handle, addr netip.Prefix) (netlink.Link, error) {
	eth, err := h.LinkByName(NodeLinkName)
	if err != nil {
		return nil, fmt.Errorf("finding %s: %w", NodeLinkName, err)
	}
	if err := h.LinkSetARPOff(eth); err != nil {
		return nil, fmt.Errorf("NOARP on %s: %w", NodeLinkName, err)
	}
	// A veth hands its peer TCP's frames with the checksum left for the
	// hardware to fill (and, with it, segmentation offload); a packet
	// socket would read them unfinished. Without the offload the kernel
	// finishes every frame before the wire sees it.
	if err := ns.Do(func() error { return setTxChecksum(NodeLinkName, false) }); err != nil {
		return nil, fmt.Errorf("turning transmit checksum offload off on %s: %w", NodeLinkName, err)
	}
	if err := h.AddrAdd(eth, &netlink.Addr{IPNet: prefixNet(addr)}); err != nil {
		return nil, fmt.Errorf("address %s on %s: %w", addr, NodeLinkName, err)
	}
	if err := h.LinkSetUp(eth); err != nil {
		return nil, fmt.Errorf("%s up: %w", NodeLinkName, err)
	}
	return eth, nil
}

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ifreqData is struct ifreq with its union holding a pointer (ifr_data).
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// setTxChecksum turns link's transmit checksum offload on or off
// (ETHTOOL_STXCSUM) in the calling thread's namespace.
func setTxChecksum(link string, on bool) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	value := ethtoolValue{cmd: unix.ETHTOOL_STXCSUM}
	if on {
		value.data = 1
	}
	var ifr ifreqData
	copy(ifr.name[:], link)
	ifr.data = unsafe.Pointer(&value)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return errno
	}
	return nil
}

// packetSocketBuffer is asked for as each uplink socket's receive and send
// buffer (the kernel caps it at net.core.rmem_max and wmem_max): the
// router drops what a full buffer cannot take, and TCP must resend it.
const packetSocketBuffer = 4 << 20

// openPacketSocket opens an AF_PACKET raw socket in ns bound to the link
// of index ifindex, taking IPv4 frames.
func openPacketSocket(ns *Namespace, ifindex int) (*os.File, error) {
	var f *os.File
	err := ns.Do(func() error {
		// Protocol 0 takes no frame before bind narrows it to the wire.
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening a packet socket (it takes CAP_NET_RAW in the user namespace owning the network namespace): %w", err)
		}
		// IPv4 only; and unlike ETH_P_ALL it does not see the frames the
		// socket itself sends.
		sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP), Ifindex: ifindex}
		if err := unix.Bind(fd, sa); err != nil {
			unix.Close(fd)
			return fmt.Errorf("binding a packet socket to %s: %w", WireLinkName, err)
		}
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, packetSocketBuffer)
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, packetSocketBuffer)
		f = os.NewFile(uintptr(fd), "uplink "+WireLinkName)
		return nil
	})
	return f, err
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// routeVia routes dst over link (NOARP: no gateway to name).
func routeVia(h *netlink.Handle, link netlink.Link, dst netip.Prefix) error {
	r := &netlink.Route{LinkIndex: link.Attrs().Index, Scope: netlink.SCOPE_LINK, Dst: prefixNet(dst.Masked())}
	if err := h.RouteReplace(r); err != nil {
		return fmt.Errorf("route to %s via %s: %w", dst, link.Attrs().Name, err)
	}
	return nil
}

// checkUplinkSocket says why fd cannot be an uplink: it must be an
// AF_PACKET raw socket bound to a link.
func checkUplinkSocket(fd int) error {
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return fmt.Errorf("not a socket: %w", err)
	}
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil || domain != unix.AF_PACKET || typ != unix.SOCK_RAW {
		return fmt.Errorf("a socket of domain %d type %d, want an AF_PACKET (%d) SOCK_RAW (%d) socket", domain, typ, unix.AF_PACKET, unix.SOCK_RAW)
	}
	sa, err := unix.Getsockname(fd)
	if ll, ok := sa.(*unix.SockaddrLinklayer); err != nil || !ok || ll.Ifindex == 0 {
		return errors.New("a packet socket bound to no link, want one bound to the node's " + WireLinkName)
	}
	return nil
}
