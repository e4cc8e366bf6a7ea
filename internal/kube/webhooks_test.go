package kube

import (
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestWebhookConfigurationsAt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		caBundle []byte
	}{
		{name: "trusting a CA", caBundle: []byte("-----BEGIN CERTIFICATE-----\n")},
		{name: "without a CA (the operator puts its own)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := WebhookConfigurationsAt("https://127.0.0.1:9443", tc.caBundle)
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]bool{}
			for _, o := range objs {
				kinds[o.GetKind()] = true
				if !strings.HasPrefix(o.GetName(), "paddlejob-") {
					t.Errorf("%s %s: not named as config/default names it", o.GetKind(), o.GetName())
				}
				hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
				if len(hooks) == 0 {
					t.Fatalf("%s %s has no webhooks", o.GetKind(), o.GetName())
				}
				for _, h := range hooks {
					cc := h.(map[string]any)["clientConfig"].(map[string]any)
					if _, ok := cc["service"]; ok {
						t.Errorf("%s: still calls a Service", o.GetName())
					}
					if url, _ := cc["url"].(string); !strings.HasPrefix(url, "https://127.0.0.1:9443/") {
						t.Errorf("%s: url %q, want the operator's address and the webhook's path", o.GetName(), url)
					}
					got, _ := cc["caBundle"].(string)
					if want := base64.StdEncoding.EncodeToString(tc.caBundle); len(tc.caBundle) > 0 && got != want || len(tc.caBundle) == 0 && got != "" {
						t.Errorf("%s: caBundle %q, want %q", o.GetName(), got, want)
					}
				}
			}
			if !kinds["ValidatingWebhookConfiguration"] || !kinds["MutatingWebhookConfiguration"] {
				t.Errorf("kinds %v, want both webhook configurations", kinds)
			}
		})
	}
}
