// Package config embeds the generated install manifests, so that binaries
// (the local cluster, tests) install exactly what `make manifests` generated.
package config

import "embed"

// Manifests holds the CRD and the operator's RBAC.
//
//go:embed crd/bases/*.yaml rbac/role.yaml
var Manifests embed.FS

// CRDFile and OperatorRoleFile name the files within Manifests.
const (
	CRDFile          = "crd/bases/batch.paddlepaddle.org_paddlejobs.yaml"
	OperatorRoleFile = "rbac/role.yaml"
)
