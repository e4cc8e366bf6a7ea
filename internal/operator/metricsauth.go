package operator

import (
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// authorizedScrapers lets through only the requests whose bearer token the
// API server authenticates (a TokenReview) and whose user it authorizes to
// get the request's path (a SubjectAccessReview on the non-resource URL):
// what kube-rbac-proxy and controller-runtime's own filter do, without
// k8s.io/apiserver's dependencies. A scraper's ServiceAccount is bound to
// the ClusterRole paddlejob-metrics-reader (config/rbac).
func authorizedScrapers(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return scraperFilter(cs), nil
}

// scraperFilter is authorizedScrapers' filter, asking cs.
func scraperFilter(cs kubernetes.Interface) metricsserver.Filter {
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || token == "" {
				http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
				return
			}
			review, err := cs.AuthenticationV1().TokenReviews().Create(r.Context(),
				&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
			if err != nil {
				log.Error(err, "reviewing a metrics scraper's token")
				http.Error(w, "the token could not be reviewed", http.StatusInternalServerError)
				return
			}
			if !review.Status.Authenticated {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			user := review.Status.User
			extra := map[string]authorizationv1.ExtraValue{}
			for k, v := range user.Extra {
				extra[k] = authorizationv1.ExtraValue(v)
			}
			access, err := cs.AuthorizationV1().SubjectAccessReviews().Create(r.Context(), &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{
					User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra,
					NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: r.URL.Path, Verb: strings.ToLower(r.Method)},
				},
			}, metav1.CreateOptions{})
			if err != nil {
				log.Error(err, "authorizing a metrics scraper")
				http.Error(w, "the request could not be authorized", http.StatusInternalServerError)
				return
			}
			if !access.Status.Allowed {
				http.Error(w, "Forbidden: "+user.Username+" may not get "+r.URL.Path, http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}
}
