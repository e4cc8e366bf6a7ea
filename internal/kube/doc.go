// Package kube holds the few Kubernetes client helpers the CLI, the local
// cluster and the tests share: loading a kubeconfig, applying manifests and
// asking discovery whether a kind is served.
package kube
