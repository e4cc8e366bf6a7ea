// Package podnetwork is the local cluster's pod network: network namespaces
// held by file descriptor (Namespace), the node's namespace with the bridge
// the pods hang off (NodeNetwork), and one namespace per pod joined to that
// bridge by a veth pair (Pod).
//
// Nothing here routes to the host: the node's namespace has no link to the
// host's and no default route, so pods reach each other, the node's own
// addresses (where the node forwards what pods may reach of the machine) and
// nothing else. Links are set up with netlink handles whose sockets are made
// inside the namespace they act on (Namespace.Do), not with the ip binary.
//
// Tests: go test runs the unit tests; the integration tests create real
// namespaces, need root (or a user namespace's root) and build with
// -tags integration.
package podnetwork
