package operator

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// MetricsAuthCache is how long the metrics endpoint trusts the API server's
// decision on a scraper (a bearer token, for one verb and path) before it
// asks again: every scrape would otherwise cost a TokenReview and a
// SubjectAccessReview. 0 turns the cache off for that kind of decision.
type MetricsAuthCache struct {
	AllowTTL time.Duration
	DenyTTL  time.Duration
}

// Defaults of MetricsAuthCache: a Prometheus scraping every 15 to 30 s
// costs two reviews a minute instead of four to eight; a token revoked or a
// binding removed is honoured within a minute, and a binding added within
// 10 seconds (controller-runtime's own filter trusts allows for 5 minutes
// and denies for 30 seconds).
const (
	DefaultMetricsAuthAllowTTL = time.Minute
	DefaultMetricsAuthDenyTTL  = 10 * time.Second
	// maxCachedScrapers bounds the decisions kept: beyond it the expired
	// ones, then any, are dropped.
	maxCachedScrapers = 1024
)

// authorizedScrapers lets through only the requests whose bearer token the
// API server authenticates (a TokenReview) and whose user it authorizes to
// get the request's path (a SubjectAccessReview on the non-resource URL):
// what kube-rbac-proxy and controller-runtime's own filter do, without
// k8s.io/apiserver's dependencies. Its decisions are cached for the TTLs of
// c. A scraper's ServiceAccount is bound to the ClusterRole
// paddlejob-metrics-reader (config/rbac).
//
// Not controller-runtime's filters.WithAuthenticationAndAuthorization (nor
// k8s.io/apiserver's cached token authenticator beneath it): its TTLs are
// fixed, its clock is the real one, and it brings the delegating
// authenticator and authorizer of k8s.io/apiserver into the binary.
func authorizedScrapers(c MetricsAuthCache) func(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	return func(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
		cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
		if err != nil {
			return nil, err
		}
		return scraperFilter(cs, c, clock.RealClock{}), nil
	}
}

// scraperDecision is the API server's answer on one token, verb and path:
// the status code (200: let through) and message, until when it holds.
type scraperDecision struct {
	code    int
	msg     string
	expires time.Time
}

// scraperKey names a decision by the token's SHA-256, never the token.
type scraperKey struct {
	token      [sha256.Size]byte
	verb, path string
}

type scraperCache struct {
	ttl   MetricsAuthCache
	clock clock.PassiveClock

	mu        sync.Mutex
	decisions map[scraperKey]scraperDecision
}

func (c *scraperCache) get(k scraperKey) (scraperDecision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.decisions[k]
	if ok && !c.clock.Now().Before(d.expires) {
		delete(c.decisions, k)
		return d, false
	}
	return d, ok
}

func (c *scraperCache) put(k scraperKey, code int, msg string) {
	ttl := c.ttl.DenyTTL
	if code == http.StatusOK {
		ttl = c.ttl.AllowTTL
	}
	if ttl <= 0 {
		return
	}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.decisions) >= maxCachedScrapers {
		for key, d := range c.decisions {
			if !now.Before(d.expires) || len(c.decisions) >= maxCachedScrapers {
				delete(c.decisions, key)
			}
		}
	}
	c.decisions[k] = scraperDecision{code: code, msg: msg, expires: now.Add(ttl)}
}

// scraperFilter is authorizedScrapers' filter, asking cs, its decisions
// cached for the TTLs of ttl on clk.
func scraperFilter(cs kubernetes.Interface, ttl MetricsAuthCache, clk clock.PassiveClock) metricsserver.Filter {
	cache := &scraperCache{ttl: ttl, clock: clk, decisions: map[scraperKey]scraperDecision{}}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || token == "" {
				http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
				return
			}
			key := scraperKey{token: sha256.Sum256([]byte(token)), verb: strings.ToLower(r.Method), path: r.URL.Path}
			d, ok := cache.get(key)
			if !ok {
				d.code, d.msg = review(r, log, cs, token, key)
				if d.code != http.StatusInternalServerError {
					cache.put(key, d.code, d.msg) // a failed review is asked again
				}
			}
			if d.code != http.StatusOK {
				http.Error(w, d.msg, d.code)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}
}

// review asks the API server who the token's user is and whether it may
// do key's verb on key's path: 200, or the refusal's code and message.
func review(r *http.Request, log logr.Logger, cs kubernetes.Interface, token string, key scraperKey) (int, string) {
	tr, err := cs.AuthenticationV1().TokenReviews().Create(r.Context(),
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		log.Error(err, "reviewing a metrics scraper's token")
		return http.StatusInternalServerError, "the token could not be reviewed"
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized, "Unauthorized"
	}
	user := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	access, err := cs.AuthorizationV1().SubjectAccessReviews().Create(r.Context(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: key.path, Verb: key.verb},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		log.Error(err, "authorizing a metrics scraper")
		return http.StatusInternalServerError, "the request could not be authorized"
	}
	if !access.Status.Allowed {
		return http.StatusForbidden, "Forbidden: " + user.Username + " may not " + key.verb + " " + key.path
	}
	return http.StatusOK, ""
}
