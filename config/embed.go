// Package config embeds the generated install manifests, so that binaries
// (the local cluster, tests) install exactly what `make manifests` generated.
package config

import "embed"

// Manifests holds the CRD, the operator's RBAC and webhook configurations.
//
//go:embed crd/bases/*.yaml rbac/role.yaml webhook/manifests.yaml
var Manifests embed.FS

// Files within Manifests.
const (
	CRDFile          = "crd/bases/batch.paddlepaddle.org_paddlejobs.yaml"
	OperatorRoleFile = "rbac/role.yaml"
	WebhookFile      = "webhook/manifests.yaml"
)
