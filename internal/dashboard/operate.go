package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// The job page's operations: suspend, resume, delete and scale an elastic
// job. Each is the SDK's (pkg/client), the one the CLI's commands call,
// through the server's client: the user's own credentials, so the cluster's
// RBAC decides, and its refusal is shown to the user as it is.

// operateHeader must be on every request that changes something. A page of
// another site cannot send it without a CORS preflight, which the server
// never allows; with the SameSite cookie and http.CrossOriginProtection
// (Sec-Fetch-Site, Origin) it keeps other pages from operating jobs through
// the user's browser.
const operateHeader = "X-Paddlejob-Dashboard"

// Done is an operation's answer.
type Done struct {
	Message string `json:"message"`
}

// ScaleRequest is the body of a scale.
type ScaleRequest struct {
	Replicas int32 `json:"replicas"`
}

// ElasticView is what the scale control of an elastic job needs.
type ElasticView struct {
	Replicas int32 `json:"replicas"`
	Min      int32 `json:"min"`
	Max      int32 `json:"max"`
}

func elasticOf(spec *paddlev1.PaddleJobSpec) *ElasticView {
	if !spec.IsElastic() || spec.Worker == nil {
		return nil
	}
	lo, hi := spec.ElasticBounds()
	return &ElasticView{Replicas: spec.Worker.Replicas, Min: lo, Max: hi}
}

// sameOrigin wraps the handlers that change something: refused unless the
// request comes from the dashboard's own page.
func sameOrigin(h http.HandlerFunc) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "refused: a request from another site (operations are the dashboard page's own)", http.StatusForbidden)
	}))
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(operateHeader) == "" {
			http.Error(w, "refused: no "+operateHeader+" header (operations are the dashboard page's own)", http.StatusForbidden)
			return
		}
		h(w, r)
	}))
}

// serveSuspend suspends the job (suspend true) or resumes it.
func (s *Server) serveSuspend(suspend bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, name, ok := jobPath(w, r)
		if !ok {
			return
		}
		if _, err := s.client.SetSuspended(r.Context(), ns, name, suspend); err != nil {
			writeError(w, err)
			return
		}
		msg := fmt.Sprintf("PaddleJob %s/%s resumed: its pods are created again", ns, name)
		if suspend {
			msg = fmt.Sprintf("PaddleJob %s/%s suspended: its pods are deleted, the job stays", ns, name)
		}
		writeJSON(w, Done{Message: msg})
	}
}

func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := jobPath(w, r)
	if !ok {
		return
	}
	if err := s.client.Delete(r.Context(), ns, name); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, Done{Message: fmt.Sprintf("PaddleJob %s/%s deleted; its pods go with it", ns, name)})
}

// serveScale sets the workers of an elastic job, within its bounds: the
// roles of other jobs are fixed while they run (paddlejob scale changes
// them, restarting the job).
func (s *Server) serveScale(w http.ResponseWriter, r *http.Request) {
	ns, name, ok := jobPath(w, r)
	if !ok {
		return
	}
	var req ScaleRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&req); err != nil {
		http.Error(w, "scale: want a JSON body {\"replicas\": N}: "+err.Error(), http.StatusBadRequest)
		return
	}
	job, err := s.client.Get(r.Context(), ns, name)
	if err != nil {
		writeError(w, err)
		return
	}
	e := elasticOf(&job.Spec)
	if e == nil {
		http.Error(w, fmt.Sprintf("PaddleJob %s/%s is not elastic: the dashboard scales elastic jobs' workers only", ns, name), http.StatusBadRequest)
		return
	}
	if req.Replicas < e.Min || req.Replicas > e.Max {
		http.Error(w, fmt.Sprintf("PaddleJob %s/%s: %d workers is outside its elastic bounds %d to %d", ns, name, req.Replicas, e.Min, e.Max), http.StatusBadRequest)
		return
	}
	if _, err := s.client.Scale(r.Context(), ns, name, paddlev1.ReplicaWorker, req.Replicas); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, Done{Message: fmt.Sprintf("PaddleJob %s/%s: workers scaled to %d", ns, name, req.Replicas)})
}

// writeError answers with the cluster's refusal as it is, under its own
// status (403 for RBAC's), so the user reads what kubectl would say.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		code = int(status.Status().Code)
	} else if errors.Is(err, client.ErrQueuedByKueue) {
		code = http.StatusConflict
	}
	http.Error(w, err.Error(), code)
}
