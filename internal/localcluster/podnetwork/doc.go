// Package podnetwork is the local cluster's pod network: network namespaces
// held by file descriptor (Namespace), the node's namespace with the bridge
// the pods hang off (NodeNetwork), one namespace per pod joined to that
// bridge by a veth pair (Pod), and the cluster network (ClusterNetwork)
// joining the nodes.
//
// Each node's eth0 is one end of a veth pair in the node's namespace; a
// packet socket on the other end, eth0-wire, is the uplink the node hands
// over a Unix socket to the cluster network (AttachNode,
// ClusterNetwork.Serve), which routes IPv4 frames between the nodes'
// uplinks and its own (HostIP, where the local cluster's forwards listen)
// in userspace (route.go). No device file is needed, and no link
// and no capability crosses a namespace boundary, so each process may be
// in a user namespace of its own. Nothing routes to the machine's own
// network: no namespace has a default route, so pods reach each other, the
// nodes, the cluster network's HostIP and nothing else. Links are set up with netlink handles whose sockets are made
// inside the namespace they act on (Namespace.Do), not with the ip binary.
//
// Tests: go test runs the unit tests; the integration tests create real
// namespaces, need root (or a user namespace's root) and build with
// -tags integration.
package podnetwork
