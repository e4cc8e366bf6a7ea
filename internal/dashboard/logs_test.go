package dashboard

import (
	"net/http"
	"strings"
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// A pod's log is served for the job's own pods only, of a container it has.
func TestLogOfAPodOfTheJob(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").UID("uid-wd").Workers(1).Obj()
	other := testutil.MakePaddleJob("other", "ns").UID("uid-other").Workers(1).Obj()
	f := newFixture(t, fixtureOptions{}, job, other,
		testutil.MakePod(job, paddlev1.ReplicaWorker, 0).Running("10.0.0.6").Obj(),
		testutil.MakePod(other, paddlev1.ReplicaWorker, 0).Running("10.0.0.7").Obj())
	for _, c := range []struct {
		path     string
		wantCode int
		want     string
	}{
		// client-go's fake serves every log as "fake logs".
		{"/api/namespaces/ns/jobs/wd/pods/wd-worker-0/log", http.StatusOK, "fake logs"},
		{"/api/namespaces/ns/jobs/wd/pods/wd-worker-0/log?follow=true&tailLines=100", http.StatusOK, "fake logs"},
		{"/api/namespaces/ns/jobs/wd/pods/wd-worker-0/log?container=paddle&previous=true", http.StatusOK, "fake logs"},
		{"/api/namespaces/ns/jobs/wd/pods/wd-worker-0/log?container=sidecar", http.StatusBadRequest, `container "sidecar": pod wd-worker-0 has paddle`},
		{"/api/namespaces/ns/jobs/wd/pods/other-worker-0/log", http.StatusNotFound, "pod ns/other-worker-0 is not a pod of PaddleJob wd"},
		{"/api/namespaces/ns/jobs/wd/pods/wd-worker-9/log", http.StatusNotFound, `"wd-worker-9" not found`},
	} {
		code, body := f.get(t, c.path)
		if code != c.wantCode || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d %q, want %d with %q", c.path, code, body, c.wantCode, c.want)
		}
	}
}

// The YAML is the job's, as kubectl shows it, without managed fields.
func TestYAMLOfTheJob(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").Workers(2).Obj()
	f := newFixture(t, fixtureOptions{}, job)
	code, body := f.get(t, "/api/namespaces/ns/jobs/wd/yaml")
	if code != http.StatusOK || !strings.Contains(body, "kind: PaddleJob\n") || !strings.Contains(body, "apiVersion: batch.paddlepaddle.org/v1\n") ||
		!strings.Contains(body, "replicas: 2") || strings.Contains(body, "managedFields") {
		t.Errorf("GET .../yaml: %d\n%s", code, body)
	}
	if code, body := f.get(t, "/api/namespaces/ns/jobs/gone/yaml"); code != http.StatusNotFound {
		t.Errorf("YAML of a job that does not exist: %d %s", code, body)
	}
}
