// Package v1 contains the PaddleJob API, group batch.paddlepaddle.org, version v1.
//
// The API is wire-compatible with the PaddleJob resource of PaddleFlow's
// paddle-operator: every manifest written for it is accepted here with the same
// meaning.
//
// +kubebuilder:object:generate=true
// +groupName=batch.paddlepaddle.org
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the PaddleJob API.
	GroupVersion = schema.GroupVersion{Group: "batch.paddlepaddle.org", Version: "v1"}

	// SchemeBuilder registers the API types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the API types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
