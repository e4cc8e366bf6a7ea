// Package node is the process node of the local cluster: a kubelet for one
// machine that runs each pod bound to it as sandboxed host processes
// (bubblewrap), with no container images or runtime. It is built on
// virtual-kubelet, which registers the Node, renews its lease, runs the pod
// lifecycle loop and serves the kubelet API; the Provider here runs the pods.
package node
