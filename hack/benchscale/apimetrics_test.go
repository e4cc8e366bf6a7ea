package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

const sampleMetrics = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 400
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 1.2e+03
apiserver_request_total{code="200",component="apiserver",dry_run="",group="batch.paddlepaddle.org",resource="paddlejobs",scope="resource",subresource="status",verb="PUT",version="v1"} 250
apiserver_request_total{code="0",component="apiserver",dry_run="",group="",resource="pods",scope="cluster",subresource="",verb="WATCH",version="v1"} 2 1700000000000
apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 7
apiserver_request_total_other{verb="POST",resource="pods"} 99
apiserver_request_duration_seconds_bucket{verb="POST",resource="pods",le="0.005"} 12
apiserver_request_total{code="201",component="apiserver",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 5
apiserver_request_total{code="201",component="apiserver",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 1
`

func TestParseRequestTotals(t *testing.T) {
	got, err := parseRequestTotals(strings.NewReader(sampleMetrics))
	if err != nil {
		t.Fatal(err)
	}
	want := requestCounts{
		{Verb: "POST", Resource: "pods"}:                             403, // codes summed
		{Verb: "PATCH", Resource: "pods", Subresource: "status"}:     1200,
		{Verb: "PUT", Resource: "paddlejobs", Subresource: "status"}: 250,
		{Verb: "WATCH", Resource: "pods"}:                            2,
		{Verb: "GET", Subresource: "/metrics"}:                       7,
		{Verb: "POST", Resource: "events"}:                           6, // both groups
	}
	if len(got) != len(want) {
		t.Errorf("got %d series %v, want %d", len(got), got, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%v = %v, want %v", k, got[k], v)
		}
	}
}

func TestParseSampleEscapes(t *testing.T) {
	labels, v, err := parseSample(`{a="x\"y",b="back\\slash",c="new\nline", d = "spaced" } 42`)
	if err != nil {
		t.Fatal(err)
	}
	if v != 42 || labels["a"] != `x"y` || labels["b"] != `back\slash` || labels["c"] != "new\nline" || labels["d"] != "spaced" {
		t.Errorf("got %v %q", v, labels)
	}
}

func TestParseRequestTotalsErrors(t *testing.T) {
	for _, in := range []string{
		`apiserver_request_total{verb="POST} 1`,
		`apiserver_request_total{verb=POST} 1`,
		`apiserver_request_total{verb="POST"}`,
		`apiserver_request_total{verb="POST"} one`,
	} {
		if _, err := parseRequestTotals(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestRequestCountsArithmetic(t *testing.T) {
	before := requestCounts{{Verb: "POST", Resource: "pods"}: 10, {Verb: "WATCH", Resource: "pods"}: 5}
	after := requestCounts{
		{Verb: "POST", Resource: "pods"}:                     50,
		{Verb: "WATCH", Resource: "pods"}:                    4, // went down: dropped
		{Verb: "GET", Resource: "configmaps"}:                3,
		{Verb: "PUT", Resource: "leases"}:                    8,
		{Verb: "PATCH", Resource: "pods", Subresource: "st"}: 2,
	}
	d := after.sub(before).only(map[string]bool{"pods": true, "configmaps": true})
	want := requestCounts{{Verb: "POST", Resource: "pods"}: 40, {Verb: "GET", Resource: "configmaps"}: 3, {Verb: "PATCH", Resource: "pods", Subresource: "st"}: 2}
	if len(d) != len(want) {
		t.Fatalf("got %v, want %v", d, want)
	}
	for k, v := range want {
		if d[k] != v {
			t.Errorf("%v = %v, want %v", k, d[k], v)
		}
	}
	writes, all := d.totals()
	if writes != 42 || all != 45 {
		t.Errorf("totals = %v, %v; want 42, 45", writes, all)
	}
	if keys := d.sortedKeys(); keys[0] != (requestKey{Verb: "POST", Resource: "pods"}) || keys[2].String() != "PATCH pods/st" {
		t.Errorf("sortedKeys = %v", keys)
	}
}

func TestClassifyRequest(t *testing.T) {
	for _, c := range []struct {
		method, url, contentType string
		want                     requestKey
	}{
		{"POST", "/api/v1/namespaces/ns/pods", "", requestKey{"POST", "pods", ""}},
		{"GET", "/api/v1/namespaces/ns/pods/p", "", requestKey{"GET", "pods", ""}},
		{"GET", "/api/v1/namespaces/ns/pods?labelSelector=a", "", requestKey{"LIST", "pods", ""}},
		{"GET", "/api/v1/pods?watch=true&resourceVersion=5", "", requestKey{"WATCH", "pods", ""}},
		{"GET", "/api/v1/pods?watch=false", "", requestKey{"LIST", "pods", ""}},
		{"PATCH", "/api/v1/namespaces/ns/pods/p/status", "application/strategic-merge-patch+json", requestKey{"PATCH", "pods", "status"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d", "application/apply-patch+yaml", requestKey{"APPLY", "deployments", ""}},
		{"PUT", "/apis/batch.paddlepaddle.org/v1/namespaces/ns/paddlejobs/j/status", "", requestKey{"PUT", "paddlejobs", "status"}},
		{"DELETE", "/apis/batch.paddlepaddle.org/v1/namespaces/ns/paddlejobs", "", requestKey{"DELETECOLLECTION", "paddlejobs", ""}},
		{"DELETE", "/api/v1/namespaces/ns", "", requestKey{"DELETE", "namespaces", ""}},
		{"POST", "/api/v1/namespaces", "", requestKey{"POST", "namespaces", ""}},
		{"PUT", "/api/v1/namespaces/ns/finalize", "", requestKey{"PUT", "namespaces", "finalize"}},
		{"GET", "/metrics", "", requestKey{"GET", "", ""}},
		{"GET", "/apis/batch.paddlepaddle.org/v1", "", requestKey{"GET", "", ""}},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := classifyRequest(c.method, u, c.contentType); got != c.want {
			t.Errorf("%s %s = %+v, want %+v", c.method, c.url, got, c.want)
		}
	}
}

func TestCountingTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("{}")) }))
	defer srv.Close()
	c := newRequestCounter()
	hc := &http.Client{Transport: c.wrap(http.DefaultTransport)}
	get := func(path string) *http.Response {
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	get("/api/v1/namespaces/ns/pods").Body.Close()
	watch := get("/api/v1/pods?watch=1")
	if n := c.snapshot()[requestKey{"WATCH", "pods", ""}]; n != 0 {
		t.Errorf("watch counted before it ended: %v", n)
	}
	watch.Body.Close()
	watch.Body.Close()
	s := c.snapshot()
	if s[requestKey{"LIST", "pods", ""}] != 1 || s[requestKey{"WATCH", "pods", ""}] != 1 {
		t.Errorf("counts = %v", s)
	}
}
