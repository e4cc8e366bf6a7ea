// Package kubebin provides the Kubernetes control-plane binaries (etcd,
// kube-apiserver, kube-scheduler, kube-controller-manager) that envtest and the
// local cluster run.
//
// Release binaries cannot always be downloaded, but the Go module proxy serves
// the sources, so the binaries are built from Go modules once and cached
// outside the repository. A directory the user names is used instead when it
// holds every binary asked for.
package kubebin
