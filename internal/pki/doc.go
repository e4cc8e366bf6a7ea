// Package pki issues the local cluster's certificates: its CA, its
// components' certificates, and the serving certificates of the webhooks
// it runs as processes (the operator's, Kueue's). The operator's own
// self-issued certificate comes from open-policy-agent/cert-controller.
package pki
