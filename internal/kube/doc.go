// Package kube holds the few Kubernetes client helpers the CLI, the local
// cluster and the tests share: loading a kubeconfig and applying manifests.
package kube
