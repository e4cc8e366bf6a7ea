// Package serviceproxy routes the local cluster's Services, in place of
// kube-proxy (docs/local-node.md#services says why). For each TCP port of a
// Service whose cluster IP is in the node's service range (DefaultCIDR,
// local to the node's services namespace), the Proxy listens on
// clusterIP:port in that namespace and forwards every connection it accepts
// to an endpoint of the Service's EndpointSlices, round-robin, dialling
// from the same namespace. The slices are the controller manager's (for
// Services with a selector) or anyone's (selectorless Services); they are
// read when a connection arrives.
//
// cidrs.go holds the cluster IPs the node serves; network.go where the
// proxy listens and dials; services.go the listener set worked out from
// the Services; endpoints.go the choice of backends from the slices;
// proxy.go the Proxy that keeps listeners open and pipes connections. The
// integration tests with a real controller manager and real pods are the
// node's (internal/localcluster/node, TestServiceProxy*).
package serviceproxy
