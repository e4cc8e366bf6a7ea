// Package serviceproxy stands in for kube-proxy, which the local cluster
// does not have. For each TCP port of a Service whose cluster IP is one of
// the node's (a loopback address, see DefaultCIDR), the Proxy listens on
// clusterIP:port and forwards every connection it accepts to a ready pod of
// the Service on the node, round-robin. Endpoints play no part (they cannot
// hold loopback addresses): a connection's backends are looked up in the
// node's pod cache when it arrives.
//
// cidrs.go holds the cluster IPs the node serves; services.go the listener
// set worked out from the Services and the choice of backends; proxy.go the
// Proxy that keeps listeners open and pipes connections. The end-to-end
// test with real pods behind a Service is the node's
// (internal/localcluster/node, TestServiceProxy).
package serviceproxy
