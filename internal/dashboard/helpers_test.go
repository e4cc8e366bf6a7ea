package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// fixture is a dashboard on fake clients: controller-runtime's for
// PaddleJobs (and the pods the SDK lists through it), client-go's for
// pods, events, ConfigMaps, namespaces and logs, as pkg/client reads them.
type fixture struct {
	ctrl   ctrlclient.WithWatch
	cs     *k8sfake.Clientset
	srv    *Server
	web    *httptest.Server
	cookie *http.Cookie
}

type fixtureOptions struct {
	namespace    string
	interceptors *interceptor.Funcs
}

func newFixture(t *testing.T, opts fixtureOptions, objs ...runtime.Object) *fixture {
	t.Helper()
	var ctrlObjs, csObjs []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *paddlev1.PaddleJob:
			ctrlObjs = append(ctrlObjs, o)
		case *corev1.Pod:
			ctrlObjs = append(ctrlObjs, o)
			csObjs = append(csObjs, o.DeepCopyObject())
		default:
			csObjs = append(csObjs, o)
		}
	}
	b := ctrlfake.NewClientBuilder().WithScheme(kube.Scheme).WithRuntimeObjects(ctrlObjs...)
	if opts.interceptors != nil {
		b = b.WithInterceptorFuncs(*opts.interceptors)
	}
	f := &fixture{ctrl: b.Build(), cs: k8sfake.NewClientset(csObjs...)}
	var err error
	f.srv, err = New(Options{Client: client.NewForClients(nil, f.ctrl, f.cs), Namespace: opts.namespace, Cluster: "https://cluster.test"})
	if err != nil {
		t.Fatal(err)
	}
	f.web = httptest.NewServer(f.srv.Handler())
	t.Cleanup(func() {
		f.srv.Close()
		f.web.Close()
	})
	f.cookie = &http.Cookie{Name: cookieName, Value: f.srv.Token()}
	return f
}

// get requests path with the token's cookie.
func (f *fixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.web.URL+path, nil)
	req.AddCookie(f.cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data []byte
}

// stream reads the server-sent events of path until the test ends.
type stream struct {
	events chan sseEvent
	seen   []string
}

func (f *fixture) stream(t *testing.T, path string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.web.URL+path, nil)
	req.AddCookie(f.cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		cancel()
		t.Fatalf("GET %s: %s %s: %s", path, resp.Status, resp.Header.Get("Content-Type"), body)
	}
	s := &stream{events: make(chan sseEvent, 256)}
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
	})
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = []byte(strings.TrimPrefix(line, "data: "))
			case line == "" && ev.name != "":
				s.events <- ev
				ev = sseEvent{}
			}
		}
	}()
	return s
}

// waitFor returns the data of the first event named name that satisfies
// ok (decoded into v), failing the test when none comes within a bound.
func (s *stream) waitFor(t *testing.T, name string, v any, ok func() bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case ev, open := <-s.events:
			if !open {
				t.Fatalf("the stream ended before a %q event as expected; events seen: %v", name, s.seen)
			}
			s.seen = append(s.seen, ev.name+" "+truncated(string(ev.data), 300))
			if ev.name != name {
				continue
			}
			if err := json.Unmarshal(ev.data, v); err != nil {
				t.Fatalf("%s event %s: %v", name, ev.data, err)
			}
			if ok() {
				return
			}
		case <-deadline:
			t.Fatalf("no %q event as expected within 15s; events seen: %v", name, s.seen)
		}
	}
}

func truncated(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
