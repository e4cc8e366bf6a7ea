package node

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Service-account tokens: a kubelet writes every pod a token bound to the pod
// (the kube-api-access volume the API server adds), so programs in pods use
// rest.InClusterConfig. The node requests them with the TokenRequest API and
// refreshes them once 80% of their life has passed, as a kubelet does.

// defaultTokenSeconds is a projected token's life when the pod names none.
const defaultTokenSeconds = 3600

type tokenKey struct {
	pod       types.UID
	audience  string
	expirySec int64
}

type cachedToken struct {
	token   string
	refresh time.Time // when to request a new one
}

// tokenIssuer requests and caches pod-bound service-account tokens.
type tokenIssuer struct {
	client kubernetes.Interface
	clock  clock.PassiveClock

	mu     sync.Mutex
	tokens map[tokenKey]cachedToken
}

func newTokenIssuer(client kubernetes.Interface, clk clock.PassiveClock) *tokenIssuer {
	return &tokenIssuer{client: client, clock: clk, tokens: map[tokenKey]cachedToken{}}
}

// token returns a token for the pod's service account, bound to the pod.
func (t *tokenIssuer) token(pod *corev1.Pod, audience string, expirySeconds *int64) (string, error) {
	exp := int64(defaultTokenSeconds)
	if expirySeconds != nil {
		exp = *expirySeconds
	}
	key := tokenKey{pod: pod.UID, audience: audience, expirySec: exp}
	now := t.clock.Now()
	t.mu.Lock()
	cached, ok := t.tokens[key]
	t.mu.Unlock()
	if ok && now.Before(cached.refresh) {
		return cached.token, nil
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := t.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	issued := now
	life := got.Status.ExpirationTimestamp.Sub(issued)
	t.mu.Lock()
	t.tokens[key] = cachedToken{token: got.Status.Token, refresh: issued.Add(life * 8 / 10)}
	t.mu.Unlock()
	return got.Status.Token, nil
}

// forget drops the tokens of a pod that is gone.
func (t *tokenIssuer) forget(pod types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.tokens {
		if k.pod == pod {
			delete(t.tokens, k)
		}
	}
}

// apiServerEnv is what a kubelet tells containers about the API server
// (KUBERNETES_SERVICE_HOST and _PORT): server is its URL as pods reach it,
// the API server's forward on the node IP (podAPIServer), which needs no
// Service proxy; the local cluster's serving certificate names the node IP.
func apiServerEnv(server string) []corev1.EnvVar {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, "443"
	}
	return []corev1.EnvVar{
		{Name: "KUBERNETES_SERVICE_HOST", Value: host},
		{Name: "KUBERNETES_SERVICE_PORT", Value: port},
		{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: port},
	}
}
