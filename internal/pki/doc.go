// Package pki issues the project's certificates: the local cluster's CA and
// component certificates, and the webhook's serving certificate.
package pki
