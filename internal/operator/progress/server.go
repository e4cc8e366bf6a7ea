package progress

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

const (
	// Audience is the audience of the pods' tokens: a token for it is
	// good for nothing but reporting progress (the API server refuses it).
	Audience = "paddlejob.batch.paddlepaddle.org/progress"
	// MaxReportBytes bounds a report's body.
	MaxReportBytes = 4 << 10

	// The variables a pod of a job gets when the feature is on.
	EnvURL       = "PADDLEJOB_PROGRESS_URL"
	EnvTokenFile = "PADDLEJOB_PROGRESS_TOKEN_FILE"

	// The token review's extra keys of a token bound to a pod.
	extraPodName = "authentication.kubernetes.io/pod-name"
	extraPodUID  = "authentication.kubernetes.io/pod-uid"

	// tokenCacheTTL is how long a reviewed token is trusted without another
	// review; the pod it is bound to is checked on every report.
	tokenCacheTTL   = time.Minute
	maxCachedTokens = 4096
	// reviewRate and reviewBurst bound the token reviews of tokens not in
	// the cache, so that bad tokens cannot flood the API server.
	reviewRate, reviewBurst = 20, 50
)

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create

// ReportPath is the path of a job's reports.
func ReportPath(namespace, job string) string {
	return "/v1/namespaces/" + namespace + "/paddlejobs/" + job + "/progress"
}

// Server receives the training programs' reports over HTTP: it
// authenticates each with the pod-bound token it carries, checks that the
// pod belongs to the job the report is for, limits its rate and size, and
// stores it. It writes nothing to the API server.
type Server struct {
	Store *Store
	// Reviews reviews the tokens (the API server's TokenReview).
	Reviews authnclient.TokenReviewInterface
	// Reader reads pods and jobs (the manager's cache).
	Reader client.Reader
	// Leading reports whether this replica leads (its controller copies the
	// store into the statuses); a standby refuses reports with 503, and the
	// reporter retries, reaching another replica. Nil: always.
	Leading func() bool

	once    sync.Once
	reviews *rate.Limiter
	mu      sync.Mutex
	tokens  map[[sha256.Size]byte]cachedIdentity
}

type cachedIdentity struct {
	id      podIdentity
	expires time.Time
}

// podIdentity is the pod a token is bound to.
type podIdentity struct {
	namespace, name string
	uid             types.UID
}

// httpError is a refusal with its status code.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func refuse(code int, format string, args ...any) error {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

// ServeHTTP serves POST ReportPath(namespace, job).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.once.Do(func() {
		s.reviews = rate.NewLimiter(reviewRate, reviewBurst)
		s.tokens = map[[sha256.Size]byte]cachedIdentity{}
	})
	result, err := s.serve(w, r)
	reportsTotal.WithLabelValues(result).Inc()
	if err == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"accepted":true}` + "\n"))
		return
	}
	var he *httpError
	if !errors.As(err, &he) {
		log.FromContext(r.Context()).Error(err, "serving a progress report")
		he = &httpError{code: http.StatusInternalServerError, msg: "internal error; see the operator's log"}
	}
	if he.code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(1/s.Store.opts.ReportRate))))
	}
	if he.code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="paddlejob-progress"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(he.code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": he.msg})
}

// serve handles one request; result labels it for the metrics.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) (result string, err error) {
	ns, job, ok := parsePath(r.URL.Path)
	if !ok {
		return "not_found", refuse(http.StatusNotFound, "no such path: POST %s", ReportPath("NAMESPACE", "JOB"))
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return "bad_method", refuse(http.StatusMethodNotAllowed, "method %s: POST a report", r.Method)
	}
	if s.Leading != nil && !s.Leading() {
		return "standby", refuse(http.StatusServiceUnavailable, "this operator replica is a standby: retry, to reach the leader")
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return "unauthenticated", refuse(http.StatusUnauthorized, "no bearer token: send the pod's token of audience %s (the file $%s)", Audience, EnvTokenFile)
	}
	id, err := s.authenticate(r.Context(), strings.TrimSpace(token))
	if err != nil {
		return "unauthenticated", err
	}
	// Read the body before the pod: a report too large is refused as such.
	body := http.MaxBytesReader(w, r.Body, MaxReportBytes)
	rep, err := DecodeReport(body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return "too_large", refuse(http.StatusRequestEntityTooLarge, "the report is larger than %d bytes", MaxReportBytes)
		}
		return "invalid", refuse(http.StatusBadRequest, "%v", err)
	}
	pod, pj, err := s.jobOf(r.Context(), id, ns, job)
	if err != nil {
		return "forbidden", err
	}
	switch s.Store.put(types.NamespacedName{Namespace: ns, Name: job}, pj.UID, pod.Name, rank(pod), rep) {
	case rateLimited:
		return "rate_limited", refuse(http.StatusTooManyRequests, "pod %s reports more often than %g a second (burst %d): report less often", pod.Name, s.Store.opts.ReportRate, s.Store.opts.ReportBurst)
	case storeFull:
		return "store_full", refuse(http.StatusServiceUnavailable, "the operator holds the progress of %d jobs already", s.Store.opts.MaxJobs)
	}
	return "accepted", nil
}

// parsePath splits /v1/namespaces/NS/paddlejobs/NAME/progress.
func parsePath(p string) (ns, job string, ok bool) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	if len(parts) != 6 || parts[0] != "v1" || parts[1] != "namespaces" || parts[3] != "paddlejobs" || parts[5] != "progress" {
		return "", "", false
	}
	if len(validation.IsDNS1123Label(parts[2])) > 0 || len(validation.IsDNS1123Label(parts[4])) > 0 {
		return "", "", false
	}
	return parts[2], parts[4], true
}

// authenticate reviews a token for Audience and returns the pod it is bound
// to. The token itself is never logged nor returned in an error.
func (s *Server) authenticate(ctx context.Context, token string) (podIdentity, error) {
	sum := sha256.Sum256([]byte(token))
	now := time.Now()
	s.mu.Lock()
	if c, ok := s.tokens[sum]; ok && now.Before(c.expires) {
		s.mu.Unlock()
		return c.id, nil
	}
	s.mu.Unlock()
	if !s.reviews.Allow() {
		return podIdentity{}, refuse(http.StatusTooManyRequests, "too many reports with new tokens: retry later")
	}
	tr, err := s.Reviews.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{Audience}}}, metav1.CreateOptions{})
	if err != nil {
		return podIdentity{}, fmt.Errorf("reviewing a report's token: %w", err)
	}
	st := tr.Status
	if !st.Authenticated {
		return podIdentity{}, refuse(http.StatusUnauthorized, "the token is not valid (expired, revoked, or not a service account token): send the pod's projected token of audience %s", Audience)
	}
	if !slices.Contains(st.Audiences, Audience) {
		return podIdentity{}, refuse(http.StatusUnauthorized, "the token is not for audience %s", Audience)
	}
	name, uid := first(st.User.Extra[extraPodName]), first(st.User.Extra[extraPodUID])
	ns, _, ok := serviceAccountOf(st.User.Username)
	if name == "" || uid == "" || !ok {
		return podIdentity{}, refuse(http.StatusUnauthorized, "the token is not bound to a pod: send the pod's projected service account token, not a Secret's")
	}
	id := podIdentity{namespace: ns, name: name, uid: types.UID(uid)}
	s.mu.Lock()
	if len(s.tokens) >= maxCachedTokens {
		for k, c := range s.tokens {
			if !now.Before(c.expires) || len(s.tokens) >= maxCachedTokens {
				delete(s.tokens, k)
			}
		}
	}
	s.tokens[sum] = cachedIdentity{id: id, expires: now.Add(tokenCacheTTL)}
	s.mu.Unlock()
	return id, nil
}

func first(v authnv1.ExtraValue) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// serviceAccountOf splits system:serviceaccount:NS:NAME.
func serviceAccountOf(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	return ns, name, ok && ns != "" && name != ""
}

// jobOf checks that the token's pod exists, is the pod the token was bound
// to, and belongs to the job ns/job, which is not finished.
func (s *Server) jobOf(ctx context.Context, id podIdentity, ns, job string) (*corev1.Pod, *paddlev1.PaddleJob, error) {
	if id.namespace != ns {
		return nil, nil, refuse(http.StatusForbidden, "the token's pod is in namespace %s, not %s: a pod reports for its own job only", id.namespace, ns)
	}
	pod := &corev1.Pod{}
	if err := s.Reader.Get(ctx, types.NamespacedName{Namespace: id.namespace, Name: id.name}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, refuse(http.StatusForbidden, "the token's pod %s/%s is not a pod of a PaddleJob", id.namespace, id.name)
		}
		return nil, nil, err
	}
	if pod.UID != id.uid {
		return nil, nil, refuse(http.StatusForbidden, "the token was bound to an earlier pod named %s/%s", id.namespace, id.name)
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.APIVersion != paddlev1.GroupVersion.String() || ref.Kind != "PaddleJob" || ref.Name != job {
		return nil, nil, refuse(http.StatusForbidden, "pod %s/%s does not belong to PaddleJob %s: a pod reports for its own job only", pod.Namespace, pod.Name, job)
	}
	pj := &paddlev1.PaddleJob{}
	if err := s.Reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: job}, pj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, refuse(http.StatusForbidden, "PaddleJob %s/%s does not exist", ns, job)
		}
		return nil, nil, err
	}
	if pj.UID != ref.UID {
		return nil, nil, refuse(http.StatusForbidden, "pod %s/%s belongs to an earlier PaddleJob named %s", pod.Namespace, pod.Name, job)
	}
	if pj.Status.IsFinished() {
		return nil, nil, refuse(http.StatusConflict, "PaddleJob %s/%s has finished (%s): its progress is final", ns, job, pj.Status.Phase)
	}
	return pod, pj, nil
}

// rank orders a job's pods: workers first, by index, then heter, then ps.
func rank(pod *corev1.Pod) int {
	order := map[string]int{string(paddlev1.ReplicaWorker): 0, string(paddlev1.ReplicaHeter): 1, string(paddlev1.ReplicaPS): 2}
	o, ok := order[pod.Labels[paddlev1.LabelReplicaType]]
	if !ok {
		o = 3
	}
	i, err := strconv.Atoi(pod.Labels[paddlev1.LabelReplicaIndex])
	if err != nil || i < 0 {
		i = 1 << 20
	}
	return o<<21 | min(i, 1<<20)
}

// Serve runs the server on addr until ctx is done.
func (s *Server) Serve(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("progress endpoint: listening on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
