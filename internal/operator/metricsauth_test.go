package operator

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
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
	h, err := scraperFilter(cs, MetricsAuthCache{}, clocktesting.NewFakeClock(time.Unix(0, 0)))(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
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

// The API server's decisions on a scraper are cached, allowed and denied
// alike, each for its TTL: a second scrape within it costs no review, one
// after it asks again. A failed review is not cached.
func TestScraperFilterCachesDecisions(t *testing.T) {
	const allowTTL, denyTTL = time.Minute, 10 * time.Second
	var tokenReviews, accessReviews int
	failing := false
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tokenReviews++
		if failing {
			return true, nil, errors.New("the API server is away")
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		tr.Status.Authenticated = true
		tr.Status.User = authenticationv1.UserInfo{Username: "system:serviceaccount:monitoring:" + tr.Spec.Token}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		accessReviews++
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		sar.Status.Allowed = sar.Spec.User == "system:serviceaccount:monitoring:prometheus"
		return true, sar, nil
	})
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	h, err := scraperFilter(cs, MetricsAuthCache{AllowTTL: allowTTL, DenyTTL: denyTTL}, clk)(logr.Discard(),
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	if err != nil {
		t.Fatal(err)
	}
	scrape := func(token string, wantCode, wantTokenReviews, wantAccessReviews int) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != wantCode {
			t.Errorf("%s: %d %q, want %d", token, rec.Code, rec.Body.String(), wantCode)
		}
		if tokenReviews != wantTokenReviews || accessReviews != wantAccessReviews {
			t.Errorf("%s: %d token and %d access reviews so far, want %d and %d", token, tokenReviews, accessReviews, wantTokenReviews, wantAccessReviews)
		}
	}

	scrape("prometheus", http.StatusOK, 1, 1)
	clk.Step(allowTTL - time.Second)
	scrape("prometheus", http.StatusOK, 1, 1) // within the TTL: no call
	scrape("grafana", http.StatusForbidden, 2, 2)
	scrape("grafana", http.StatusForbidden, 2, 2) // denied, cached too
	clk.Step(time.Second)
	scrape("prometheus", http.StatusOK, 3, 3) // the TTL passed: asked again
	clk.Step(denyTTL)
	scrape("grafana", http.StatusForbidden, 4, 4)

	// A review that failed is asked again at the next scrape.
	failing = true
	scrape("alertmanager", http.StatusInternalServerError, 5, 4)
	failing = false
	scrape("alertmanager", http.StatusForbidden, 6, 5)
	// Another path is another decision.
	req := httptest.NewRequest(http.MethodGet, "/debug", nil)
	req.Header.Set("Authorization", "Bearer prometheus")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if tokenReviews != 7 || accessReviews != 6 {
		t.Errorf("another path of a cached token: %d token and %d access reviews, want it reviewed (7, 6)", tokenReviews, accessReviews)
	}
}
