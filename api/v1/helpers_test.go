package v1

import (
	"os"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestEnumListsMatchTheCRD holds the Go lists of enum values to the enum
// markers, as the generated CRD shows them: code that checks a value before
// the API server does must agree with it.
func TestEnumListsMatchTheCRD(t *testing.T) {
	spec := crdSpecSchema(t)
	enum := func(schema apiextensionsv1.JSONSchemaProps) []string {
		var out []string
		for _, v := range schema.Enum {
			var s string
			if err := yaml.Unmarshal(v.Raw, &s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	for _, tc := range []struct {
		field string
		crd   []string
		list  []string
	}{
		{"spec.intranet", enum(spec.Properties["intranet"]), asStrings(Intranets)},
		{"spec.cleanPodPolicy", enum(spec.Properties["cleanPodPolicy"]), asStrings(CleanPodPolicies)},
		{"spec.cleanPolicy", enum(spec.Properties["cleanPolicy"]), asStrings(CleanPodPolicies)},
		{"spec.worker.restartPolicy", enum(spec.Properties["worker"].Properties["restartPolicy"]), asStrings(RestartPolicies)},
		{"spec.restartScope", enum(spec.Properties["restartScope"]), asStrings(RestartScopes)},
	} {
		if len(tc.crd) == 0 || !slices.Equal(tc.crd, tc.list) {
			t.Errorf("%s: the CRD allows %q, the Go list %q", tc.field, tc.crd, tc.list)
		}
	}
}

// crdSpecSchema is the generated CRD's schema of a PaddleJob's spec.
func crdSpecSchema(t *testing.T) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	raw, err := os.ReadFile("../../config/crd/bases/batch.paddlepaddle.org_paddlejobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
}

func asStrings[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

func TestOneOf(t *testing.T) {
	if got := OneOf(Intranets); got != "PodIP, Service or Host" {
		t.Errorf("OneOf(Intranets) = %q", got)
	}
	if got := OneOf([]Intranet{IntranetHost}); got != "Host" {
		t.Errorf("OneOf of one value = %q", got)
	}
}
