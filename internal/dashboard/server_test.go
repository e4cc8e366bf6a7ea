package dashboard

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The API answers only the browser that opened the printed URL: the token
// in it becomes a SameSite, HttpOnly cookie, and a request without it is
// refused. The page's assets, which hold no data, are public.
func TestTheAPINeedsTheURLsToken(t *testing.T) {
	f := newFixture(t, fixtureOptions{namespace: "team-a"})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, cookie *http.Cookie) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, f.web.URL+path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}

	for _, path := range []string{"/api/config", "/api/namespaces", "/api/jobs/stream", "/api/namespaces/ns/jobs/wd/yaml"} {
		if resp := get(path, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the cookie: %s, want 401", path, resp.Status)
		}
		if resp := get(path, &http.Cookie{Name: cookieName, Value: "guess"}); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong cookie: %s, want 401", path, resp.Status)
		}
	}
	if resp := get("/?token=guess", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /?token=guess: %s, want 401", resp.Status)
	}

	resp := get("/?token="+url.QueryEscape(f.srv.Token()), nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("GET /?token=<token>: %s to %q, want 303 to / (the token out of the address bar)", resp.Status, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			cookie = c
		}
	}
	if cookie == nil || cookie.Value != f.srv.Token() || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v: want the token, HttpOnly, SameSite=Strict", cookie)
	}
	code, body := f.get(t, "/api/config")
	if code != http.StatusOK || body != `{"cluster":"https://cluster.test","namespace":"team-a"}`+"\n" {
		t.Errorf("GET /api/config with the cookie: %d %s", code, body)
	}

	// The page is public, and may load nothing from elsewhere.
	page := get("/", nil)
	if page.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %s", page.Status)
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q: want the page's own origin only, and no framing", csp)
	}
}

// The page is the one web/ builds, with its assets, from the binary.
func TestThePageIsEmbedded(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	code, page := f.get(t, "/")
	if code != http.StatusOK || !strings.Contains(page, `<div id="app">`) {
		t.Fatalf("GET /: %d %s", code, page)
	}
	i := strings.Index(page, `src="/assets/`)
	if i < 0 {
		t.Fatalf("the page loads no script of its own: %s", page)
	}
	script := page[i+len(`src="`):]
	script = script[:strings.Index(script, `"`)]
	if code, js := f.get(t, script); code != http.StatusOK || !strings.Contains(js, "EventSource") {
		t.Errorf("GET %s: %d, %d bytes", script, code, len(js))
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Errorf("the page names another origin: %s", page)
	}
}

// Bad names are refused with the field and the rule, before any request
// reaches the cluster.
func TestBadNamesAreRefused(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	for path, want := range map[string]string{
		"/api/namespaces/Team_A/jobs/wd/yaml":                          `namespace "Team_A"`,
		"/api/namespaces/ns/jobs/WD/stream":                            `PaddleJob name "WD"`,
		"/api/namespaces/ns/jobs/wd/pods/wd_worker_0/log":              `pod "wd_worker_0"`,
		"/api/jobs/stream?namespace=" + url.QueryEscape("a b"):         `namespace "a b"`,
		"/api/namespaces/ns/jobs/wd/pods/wd-worker-0/log?tailLines=-1": "tailLines \"-1\": want a whole number of lines",
	} {
		code, body := f.get(t, path)
		if code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %q, want 400 saying %s", path, code, body, want)
		}
	}
	if code, body := f.get(t, "/api/nothing"); code != http.StatusNotFound {
		t.Errorf("GET /api/nothing: %d %s", code, body)
	}
}
