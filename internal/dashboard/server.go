package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/paddlejob/paddlejob/pkg/client"
)

// Options configure a Server.
type Options struct {
	// Client reads the cluster, with the user's own credentials.
	Client *client.Client
	// Namespace is the namespace the jobs page opens with ("" for all).
	Namespace string
	// Cluster names the cluster in the page's header (its server URL,
	// the kubeconfig context).
	Cluster string
	// Token is the secret of the URL the user opens (?token=); the browser
	// then keeps it as a cookie. Empty: a random one.
	Token string
}

// Server is the dashboard: a web UI of the PaddleJobs of one cluster, read
// and operated with the credentials of the user who runs it, as kubectl
// proxy does. It reads (get, list and watch PaddleJobs, pods, events and
// ConfigMaps; pods' logs), patches and deletes PaddleJobs when the user
// asks (operate.go), and runs nothing in the cluster.
//
// Anything on this machine may reach a loopback port, and any web page the
// user opens may make its browser send requests there. So the API answers
// only requests bearing the token the user was given in the URL (kept as a
// SameSite=Strict, HttpOnly cookie, which pages of other sites cannot make
// the browser send); the page's assets, which hold no data, are public.
// What changes something must also come from the page itself (operate.go).
type Server struct {
	client    *client.Client
	namespace string
	cluster   string
	token     string

	ctx    context.Context
	cancel context.CancelFunc
	hubsMu sync.Mutex
	hubs   map[string]*jobsHub
}

// New returns a server; Close stops what it follows.
func New(opts Options) (*Server, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("dashboard: no client")
	}
	if opts.Namespace != "" {
		if err := validName("namespace", opts.Namespace); err != nil {
			return nil, err
		}
	}
	token := opts.Token
	if token == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		token = base64.RawURLEncoding.EncodeToString(b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{client: opts.Client, namespace: opts.Namespace, cluster: opts.Cluster, token: token,
		ctx: ctx, cancel: cancel, hubs: map[string]*jobsHub{}}, nil
}

// Token is the secret the URL must carry.
func (s *Server) Token() string { return s.token }

// Close stops the informers of the jobs pages and ends their streams.
func (s *Server) Close() { s.cancel() }

// cookieName is the cookie that carries the token.
const cookieName = "paddlejob-dashboard"

// Handler serves the pages and their API:
//
//	GET /?token=...                                     sets the cookie, then the page
//	GET /api/config                                     the cluster and the default namespace
//	GET /api/namespaces                                 the namespaces the user may list
//	GET /api/jobs/stream?namespace=                     the jobs page (server-sent events)
//	GET /api/namespaces/{ns}/jobs/{name}/stream         the job page (server-sent events)
//	GET /api/namespaces/{ns}/jobs/{name}/yaml           the job's YAML
//	GET /api/namespaces/{ns}/jobs/{name}/pods/{pod}/log a pod's log (?container, follow, previous, tailLines)
//	POST /api/namespaces/{ns}/jobs/{name}/suspend       suspend the job
//	POST /api/namespaces/{ns}/jobs/{name}/resume        resume it
//	POST /api/namespaces/{ns}/jobs/{name}/scale         scale an elastic job's workers ({"replicas": N})
//	DELETE /api/namespaces/{ns}/jobs/{name}             delete the job
func (s *Server) Handler() http.Handler {
	api := http.NewServeMux()
	api.HandleFunc("GET /api/config", s.serveConfig)
	api.HandleFunc("GET /api/namespaces", s.serveNamespaces)
	api.HandleFunc("GET /api/jobs/stream", s.serveJobsStream)
	api.HandleFunc("GET /api/namespaces/{ns}/jobs/{name}/stream", s.serveJobStream)
	api.HandleFunc("GET /api/namespaces/{ns}/jobs/{name}/yaml", s.serveYAML)
	api.HandleFunc("GET /api/namespaces/{ns}/jobs/{name}/pods/{pod}/log", s.serveLog)
	api.Handle("POST /api/namespaces/{ns}/jobs/{name}/suspend", sameOrigin(s.serveSuspend(true)))
	api.Handle("POST /api/namespaces/{ns}/jobs/{name}/resume", sameOrigin(s.serveSuspend(false)))
	api.Handle("POST /api/namespaces/{ns}/jobs/{name}/scale", sameOrigin(s.serveScale))
	api.Handle("DELETE /api/namespaces/{ns}/jobs/{name}", sameOrigin(s.serveDelete))
	api.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such API: "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	})
	assets := assetHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w)
		if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") {
			if !s.validToken(t) {
				http.Error(w, "wrong token: open the URL paddlejob dashboard printed", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			// The same page without the token in the address bar (the
			// browser keeps the #fragment).
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/") {
			c, err := r.Cookie(cookieName)
			if err != nil || !s.validToken(c.Value) {
				http.Error(w, "not signed in: open the URL paddlejob dashboard printed (it carries a token)", http.StatusUnauthorized)
				return
			}
			api.ServeHTTP(w, r)
			return
		}
		assets.ServeHTTP(w, r)
	})
}

// streamContext is a request's context, also ended by Close: a live stream
// ends when the server stops, rather than holding its shutdown.
func (s *Server) streamContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (s *Server) validToken(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

// setSecurityHeaders keeps the page from being framed by other sites and
// from loading anything but its own assets: it works offline, from no CDN.
func setSecurityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
}

// Config is what the page needs to start.
type Config struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
}

func (s *Server) serveConfig(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, Config{Cluster: s.cluster, Namespace: s.namespace})
}

// Namespaces lists the namespaces for the namespace picker; a user who may
// not list them gets an empty list and types a name.
type Namespaces struct {
	Names []string `json:"names"`
	Error string   `json:"error,omitempty"`
}

func (s *Server) serveNamespaces(w http.ResponseWriter, r *http.Request) {
	out := Namespaces{Names: []string{}}
	list, err := s.client.Clientset().CoreV1().Namespaces().List(r.Context(), metav1.ListOptions{})
	if err != nil {
		out.Error = err.Error()
	} else {
		for _, n := range list.Items {
			out.Names = append(out.Names, n.Name)
		}
		slices.Sort(out.Names)
	}
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// jobPath reads {ns} and {name}, answering 400 when either is no valid name.
func jobPath(w http.ResponseWriter, r *http.Request) (ns, name string, ok bool) {
	ns, name = r.PathValue("ns"), r.PathValue("name")
	for _, f := range []struct{ field, value string }{{"namespace", ns}, {"PaddleJob name", name}} {
		if err := validName(f.field, f.value); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return "", "", false
		}
	}
	return ns, name, true
}

// validName checks a namespace, job or pod name: a DNS subdomain
// (lowercase letters, digits, '-' and '.').
func validName(field, value string) error {
	if errs := validation.IsDNS1123Subdomain(value); len(errs) > 0 {
		return fmt.Errorf("%s %q: %s", field, value, strings.Join(errs, "; "))
	}
	return nil
}
