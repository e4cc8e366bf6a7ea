package operator

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Who may scrape: the API server's answers to the token and access reviews
// decide, and the request reaches the metrics only when both say yes.
func TestScraperFilter(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		tr.Status.Authenticated = tr.Spec.Token != "forged"
		tr.Status.User = authenticationv1.UserInfo{Username: "system:serviceaccount:monitoring:" + tr.Spec.Token}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		na := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "system:serviceaccount:monitoring:prometheus" && na != nil && na.Path == "/metrics" && na.Verb == "get"
		return true, sar, nil
	})
	h, err := scraperFilter(cs)(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{name: "anonymous", want: http.StatusUnauthorized},
		{name: "not a bearer token", auth: "Basic cHJvbTpwYXNz", want: http.StatusUnauthorized},
		{name: "a token the API server rejects", auth: "Bearer forged", want: http.StatusUnauthorized},
		{name: "a user not allowed /metrics", auth: "Bearer grafana", want: http.StatusForbidden},
		{name: "the scraper", auth: "Bearer prometheus", want: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want || (tc.want == http.StatusOK) != (rec.Body.String() == "metrics") {
				t.Errorf("got %d %q, want %d", rec.Code, rec.Body.String(), tc.want)
			}
		})
	}
}
