package kube

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// ServesKind reports whether the API server serves gvk: its group version
// is in discovery and lists the kind. A group version it does not know is
// not an error.
func ServesKind(dc discovery.DiscoveryInterface, gvk schema.GroupVersionKind) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", gvk.GroupVersion(), err)
	}
	for _, res := range list.APIResources {
		if res.Kind == gvk.Kind {
			return true, nil
		}
	}
	return false, nil
}
