package podnetwork

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// UplinkMTU is the MTU of the uplinks, the cluster network's tun, the
// bridge and the pods' veth pairs: the largest a tun takes, so that a TCP
// stream crosses the userspace router in as few packets as it can.
const UplinkMTU = 65520

// addTun creates a TUN device (L3, no packet information header) named
// name in ns, holding addr with its prefix length, at UplinkMTU, up. The
// device lives while its file is open; the file is non-blocking, so reads
// go through Go's poller and Close unblocks them.
func addTun(ns *Namespace, h *netlink.Handle, name string, addr netip.Prefix) (*os.File, netlink.Link, error) {
	var f *os.File
	// A tun is made in the network namespace of the thread that opens
	// /dev/net/tun.
	err := ns.Do(func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening /dev/net/tun%s: %w", tunOpenHint(err), err)
		}
		ifr, err := unix.NewIfreq(name)
		if err == nil {
			ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
			err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
		}
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("creating the tun %s: %w", name, err)
		}
		f = os.NewFile(uintptr(fd), "tun "+name)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	link, err := setUpTun(h, name, addr)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, link, nil
}

func setUpTun(h *netlink.Handle, name string, addr netip.Prefix) (netlink.Link, error) {
	link, err := h.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("finding the tun %s: %w", name, err)
	}
	if err := h.LinkSetMTU(link, UplinkMTU); err != nil {
		return nil, fmt.Errorf("MTU %d on %s: %w", UplinkMTU, name, err)
	}
	// The address brings the route to its prefix; a tun has no neighbours
	// to resolve (no ARP), so every address of it is reached directly.
	if err := h.AddrAdd(link, &netlink.Addr{IPNet: prefixNet(addr)}); err != nil {
		return nil, fmt.Errorf("address %s on %s: %w", addr, name, err)
	}
	if err := h.LinkSetUp(link); err != nil {
		return nil, fmt.Errorf("%s up: %w", name, err)
	}
	return link, nil
}

// routeVia routes dst over link (a tun: no gateway to name).
func routeVia(h *netlink.Handle, link netlink.Link, dst netip.Prefix) error {
	r := &netlink.Route{LinkIndex: link.Attrs().Index, Scope: netlink.SCOPE_LINK, Dst: prefixNet(dst.Masked())}
	if err := h.RouteReplace(r); err != nil {
		return fmt.Errorf("route to %s via %s: %w", dst, link.Attrs().Name, err)
	}
	return nil
}

// tunOpenHint says what a failure to open /dev/net/tun asks of the machine.
func tunOpenHint(err error) string {
	switch {
	case errors.Is(err, unix.EACCES):
		// Not even a user namespace's root may open a device the host's
		// root alone may.
		return " (a normal user's node needs it readable and writable by all, mode 0666, as udev makes it on most distributions)"
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENODEV), errors.Is(err, unix.ENXIO):
		return " (the kernel's tun driver, module tun, is missing, or /dev/net/tun is not there)"
	}
	return ""
}

// isTun tells whether fd is a TUN device's file, as an uplink must be.
func isTun(fd int) bool {
	ifr, err := unix.NewIfreq("")
	if err != nil {
		return false
	}
	if err := unix.IoctlIfreq(fd, unix.TUNGETIFF, ifr); err != nil {
		return false
	}
	return ifr.Uint16()&unix.IFF_TUN != 0
}
