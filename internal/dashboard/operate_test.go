package dashboard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// operate sends a state-changing request as the page does: the cookie and
// the dashboard's header; more headers from extra.
func (f *fixture) operate(t *testing.T, method, path, body string, extra map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.web.URL+path, strings.NewReader(body))
	req.AddCookie(f.cookie)
	req.Header.Set(operateHeader, "1")
	for k, v := range extra {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (f *fixture) job(t *testing.T, ns, name string) *paddlev1.PaddleJob {
	t.Helper()
	var j paddlev1.PaddleJob
	if err := f.ctrl.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: name}, &j); err != nil {
		t.Fatal(err)
	}
	return &j
}

// The page suspends, resumes, scales and deletes a job through the SDK, as
// the CLI does.
func TestThePageOperatesAJob(t *testing.T) {
	f := newFixture(t, fixtureOptions{},
		testutil.MakePaddleJob("el", "ns").Workers(2).Elastic(1, 4).Obj(),
		testutil.MakePaddleJob("fixed", "ns").Workers(2).Obj(),
		testutil.MakePaddleJob("queued", "ns").Workers(1).Queue("team").Suspend(true).Obj())
	base := "/api/namespaces/ns/jobs/"

	if code, body := f.operate(t, http.MethodPost, base+"el/suspend", "", nil); code != http.StatusOK || !strings.Contains(body, "suspended") {
		t.Fatalf("suspend: %d %s", code, body)
	}
	if !f.job(t, "ns", "el").Spec.IsSuspended() {
		t.Fatal("suspend: spec.suspend is not true")
	}
	if code, body := f.operate(t, http.MethodPost, base+"el/resume", "", nil); code != http.StatusOK || !strings.Contains(body, "resumed") {
		t.Fatalf("resume: %d %s", code, body)
	}
	if f.job(t, "ns", "el").Spec.IsSuspended() {
		t.Fatal("resume: spec.suspend is still true")
	}

	if code, body := f.operate(t, http.MethodPost, base+"el/scale", `{"replicas": 4}`, nil); code != http.StatusOK {
		t.Fatalf("scale to 4: %d %s", code, body)
	}
	if n := f.job(t, "ns", "el").Spec.Worker.Replicas; n != 4 {
		t.Fatalf("scale to 4: %d workers", n)
	}
	for _, c := range []struct{ path, body, want string }{
		{"el/scale", `{"replicas": 5}`, "5 workers is outside its elastic bounds 1 to 4"},
		{"el/scale", `{"replicas": 0}`, "0 workers is outside its elastic bounds 1 to 4"},
		{"el/scale", `five`, `want a JSON body {"replicas": N}`},
		{"fixed/scale", `{"replicas": 3}`, "PaddleJob ns/fixed is not elastic"},
	} {
		if code, body := f.operate(t, http.MethodPost, base+c.path, c.body, nil); code != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("POST %s %s: %d %q, want 400 saying %s", c.path, c.body, code, body, c.want)
		}
	}
	if n := f.job(t, "ns", "el").Spec.Worker.Replicas; n != 4 {
		t.Errorf("a refused scale changed the workers to %d", n)
	}

	// Kueue resumes what it queues, as the CLI says.
	if code, body := f.operate(t, http.MethodPost, base+"queued/resume", "", nil); code != http.StatusConflict || !strings.Contains(body, "queued by Kueue (queue team)") {
		t.Errorf("resume of a job Kueue queues: %d %s", code, body)
	}

	if code, body := f.operate(t, http.MethodDelete, base+"fixed", "", nil); code != http.StatusOK || !strings.Contains(body, "deleted") {
		t.Fatalf("delete: %d %s", code, body)
	}
	if err := f.ctrl.Get(context.Background(), ctrlclient.ObjectKey{Namespace: "ns", Name: "fixed"}, &paddlev1.PaddleJob{}); !apierrors.IsNotFound(err) {
		t.Errorf("after delete: %v, want not found", err)
	}
	if code, body := f.operate(t, http.MethodPost, base+"gone/suspend", "", nil); code != http.StatusNotFound {
		t.Errorf("suspend of a job that does not exist: %d %s", code, body)
	}
}

// Other pages the user opens cannot operate jobs through the browser: a
// request without the dashboard's header, or one the browser says comes
// from another site, is refused and changes nothing.
func TestOperationsOfOtherSitesAreRefused(t *testing.T) {
	f := newFixture(t, fixtureOptions{}, testutil.MakePaddleJob("wd", "ns").Workers(1).Obj())
	for what, headers := range map[string]map[string]string{
		"without the header":       {operateHeader: ""},
		"from another origin":      {"Origin": "https://evil.example"},
		"a cross-site fetch":       {"Sec-Fetch-Site": "cross-site"},
		"a same-site other origin": {"Sec-Fetch-Site": "same-site"},
	} {
		code, body := f.operate(t, http.MethodPost, "/api/namespaces/ns/jobs/wd/suspend", "", headers)
		if code != http.StatusForbidden || !strings.Contains(body, "refused") {
			t.Errorf("suspend %s: %d %q, want 403", what, code, body)
		}
		code, _ = f.operate(t, http.MethodDelete, "/api/namespaces/ns/jobs/wd", "", headers)
		if code != http.StatusForbidden {
			t.Errorf("delete %s: %d, want 403", what, code)
		}
	}
	if f.job(t, "ns", "wd").Spec.IsSuspended() {
		t.Error("a refused request suspended the job")
	}
	// The page's own request, as Chromium sends it, passes.
	code, body := f.operate(t, http.MethodPost, "/api/namespaces/ns/jobs/wd/suspend", "",
		map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": f.web.URL})
	if code != http.StatusOK {
		t.Errorf("suspend from the page: %d %s", code, body)
	}
}

// The dashboard operates with the user's credentials only: what RBAC
// refuses the user is refused, in the API server's words.
func TestOperationsSayWhatTheUserMayNotDo(t *testing.T) {
	forbidden := func(verb string) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: paddlev1.GroupVersion.Group, Resource: "paddlejobs"}, "wd",
			fmt.Errorf(`User "alice" cannot %s resource "paddlejobs" in API group "batch.paddlepaddle.org" in the namespace "ns"`, verb))
	}
	f := newFixture(t, fixtureOptions{interceptors: &interceptor.Funcs{
		Patch: func(context.Context, ctrlclient.WithWatch, ctrlclient.Object, ctrlclient.Patch, ...ctrlclient.PatchOption) error {
			return forbidden("patch")
		},
		Delete: func(context.Context, ctrlclient.WithWatch, ctrlclient.Object, ...ctrlclient.DeleteOption) error {
			return forbidden("delete")
		},
	}}, testutil.MakePaddleJob("wd", "ns").Workers(2).Elastic(1, 4).Obj())
	for _, c := range []struct{ method, path, body, verb string }{
		{http.MethodPost, "wd/suspend", "", "patch"},
		{http.MethodPost, "wd/scale", `{"replicas": 3}`, "patch"},
		{http.MethodDelete, "wd", "", "delete"},
	} {
		code, body := f.operate(t, c.method, "/api/namespaces/ns/jobs/"+c.path, c.body, nil)
		want := fmt.Sprintf(`User "alice" cannot %s resource "paddlejobs"`, c.verb)
		if code != http.StatusForbidden || !strings.Contains(body, want) {
			t.Errorf("%s %s: %d %q, want 403 with the API server's %q", c.method, c.path, code, body, want)
		}
	}
}
