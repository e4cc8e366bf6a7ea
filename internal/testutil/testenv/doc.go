// Package testenv starts a real kube-apiserver and etcd for integration tests
// (controller-runtime's envtest), with the binaries from internal/localcluster/kubebin:
// KUBEBUILDER_ASSETS when set, else the cache, built there on first use.
package testenv
