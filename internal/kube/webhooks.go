package kube

import (
	"encoding/base64"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddlejob/paddlejob/config"
)

// WebhookConfigurationsAt are the generated webhook configurations, named as
// config/default names them, calling the operator at baseURL (each webhook's
// path appended) instead of through its Service: for an operator that runs
// as a process of the machine. They trust caBundle when it is not empty.
func WebhookConfigurationsAt(baseURL string, caBundle []byte) ([]*unstructured.Unstructured, error) {
	data, err := config.Manifests.ReadFile(config.WebhookFile)
	if err != nil {
		return nil, err
	}
	objs, err := DecodeManifests(data)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		o.SetName("paddlejob-" + o.GetName())
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			cc := h.(map[string]any)["clientConfig"].(map[string]any)
			path, _, _ := unstructured.NestedString(cc, "service", "path")
			delete(cc, "service")
			cc["url"] = baseURL + path
			if len(caBundle) > 0 {
				cc["caBundle"] = base64.StdEncoding.EncodeToString(caBundle)
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, hooks, "webhooks"); err != nil {
			return nil, err
		}
	}
	return objs, nil
}
