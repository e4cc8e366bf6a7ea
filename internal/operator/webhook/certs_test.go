package webhook

import (
	"net/http"
	"testing"
)

// The rotator's list and watch requests of the Secret and the webhook
// configurations ask for the one object each by name (which RBAC grants by
// resourceNames); other requests pass unchanged.
func TestRotatorRequestsNameTheirObject(t *testing.T) {
	certs := Certs{Namespace: "ops", Secret: "certs", ValidatingConfig: "v", MutatingConfig: "m"}
	tests := []struct {
		name, method, url string
		want              string // the query sent
	}{
		{"list of the Secrets", http.MethodGet, "https://api/api/v1/namespaces/ops/secrets?limit=500&resourceVersion=0",
			"fieldSelector=metadata.name%3Dcerts&limit=500&resourceVersion=0"},
		{"watch of the Secrets", http.MethodGet, "https://api/api/v1/namespaces/ops/secrets?watch=true&resourceVersion=7",
			"fieldSelector=metadata.name%3Dcerts&resourceVersion=7&watch=true"},
		{"behind a path prefix", http.MethodGet, "https://proxy/k8s/clusters/c1/api/v1/namespaces/ops/secrets?watch=true",
			"fieldSelector=metadata.name%3Dcerts&watch=true"},
		{"validating configurations", http.MethodGet, "https://api/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations?watch=true",
			"fieldSelector=metadata.name%3Dv&watch=true"},
		{"mutating configurations", http.MethodGet, "https://api/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
			"fieldSelector=metadata.name%3Dm"},
		{"a selector of its own is replaced", http.MethodGet, "https://api/api/v1/namespaces/ops/secrets?fieldSelector=type%3Dx",
			"fieldSelector=metadata.name%3Dcerts"},
		{"Secrets of another namespace", http.MethodGet, "https://api/api/v1/namespaces/xops/secrets?watch=true", "watch=true"},
		{"one Secret by name", http.MethodGet, "https://api/api/v1/namespaces/ops/secrets/certs", ""},
		{"a create", http.MethodPost, "https://api/api/v1/namespaces/ops/secrets", ""},
		{"other objects", http.MethodGet, "https://api/api/v1/namespaces/ops/configmaps?watch=true", "watch=true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sent *http.Request
			rt := namedObjectsOnly{names: certs.collections(), next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				sent = r
				return &http.Response{StatusCode: http.StatusOK}, nil
			})}
			req, err := http.NewRequest(tc.method, tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			original := req.URL.RawQuery
			if _, err := rt.RoundTrip(req); err != nil {
				t.Fatal(err)
			}
			if got := sent.URL.RawQuery; got != tc.want {
				t.Errorf("sent query %q, want %q", got, tc.want)
			}
			if req.URL.RawQuery != original {
				t.Errorf("the caller's request was changed to %q", req.URL.RawQuery)
			}
		})
	}
}

// Without a configuration name, its collection is left alone.
func TestRotatorRequestsWithoutAConfiguration(t *testing.T) {
	got := Certs{Namespace: "ops", Secret: "certs", ValidatingConfig: "v"}.collections()
	if _, ok := got["/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"]; ok || len(got) != 2 {
		t.Errorf("collections %v, want the Secrets' and the validating configurations'", got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
