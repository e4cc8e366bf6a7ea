package webhook

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/operator"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

// The suite's operator issues its own webhook certificate, as it does in a
// cluster without cert-manager: the Secret comes empty with the manifests,
// the operator runs as a user bound only to its generated roles, and the
// webhook configurations call it at https://localhost:<port> (its
// certificate names DNS names only).
const (
	operatorNS   = "paddlejob-system"
	operatorUser = "webhook-test-operator"
)

// selfIssuing is the suite's operator.
var selfIssuing struct {
	opts operator.WebhookOptions
	// readyz is the URL of its readiness check of the certificate.
	readyz string
}

// startOperator installs what the operator needs, starts it and waits
// until it is ready: its certificate rotator has filled the Secret, the
// stand-in kubelet has put it in the cert dir, and the webhook
// configurations trust it. stop stops the operator and removes its cert
// dir.
func startOperator() (stop func(), err error) {
	opts, err := operatorOptions()
	if err != nil {
		return nil, err
	}
	selfIssuing.opts = opts.Webhook
	selfIssuing.readyz = fmt.Sprintf("http://%s/readyz/webhook-certificate", opts.ProbeAddr)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	stop = func() {
		cancel()
		<-done
		os.RemoveAll(opts.Webhook.CertDir)
	}
	mgr, err := newManager(ctx, opts)
	if err != nil {
		close(done)
		stop()
		return nil, err
	}
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	if err := waitReady(ctx, opts.Webhook); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// operatorOptions are the operator's, issuing its own certificate into a
// new cert dir, on free loopback ports.
func operatorOptions() (operator.Options, error) {
	opts := operator.DefaultOptions()
	w := &opts.Webhook
	w.Certs, w.Namespace, w.Host, w.ExtraHosts = operator.CertsSelf, operatorNS, "127.0.0.1", []string{"localhost"}
	probePort, err := freePort()
	if err != nil {
		return opts, err
	}
	if w.Port, err = freePort(); err != nil {
		return opts, err
	}
	opts.MetricsAddr, opts.ProbeAddr = "0", fmt.Sprintf("127.0.0.1:%d", probePort)
	w.CertDir, err = os.MkdirTemp("", "webhook-test-certs-")
	return opts, err
}

// newManager installs what the operator needs and makes its manager,
// running as operatorUser.
func newManager(ctx context.Context, opts operator.Options) (ctrl.Manager, error) {
	if err := installForOperator(ctx, opts.Webhook); err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: operatorUser}
	return operator.NewManager(ctx, cfg, opts)
}

// waitReady waits for the rotator to fill the Secret, checks that the
// operator is not ready while the certificate is not in its cert dir, then
// starts the stand-in kubelet and waits for the operator to be ready.
func waitReady(ctx context.Context, w operator.WebhookOptions) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, kube.Key(w.Namespace, w.Secret), s); err != nil {
			return false, err
		}
		return len(s.Data[corev1.TLSCertKey]) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("the operator did not issue its certificate into the Secret %s/%s: %w", w.Namespace, w.Secret, err)
	}
	if code, body := get(selfIssuing.readyz); code == http.StatusOK || !strings.Contains(body, "waiting for the webhook's certificate in "+w.CertDir) {
		return fmt.Errorf("before its certificate is in its cert dir, the operator's readiness says %d %q", code, body)
	}
	if err := mountSecret(ctx, w.Namespace, w.Secret, w.CertDir); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		code, _ := get(selfIssuing.readyz)
		return code == http.StatusOK, nil
	})
	if err != nil {
		code, body := get(selfIssuing.readyz)
		return fmt.Errorf("the operator is not ready (%d %q): %w", code, body, err)
	}
	return nil
}

// installForOperator creates what the manifests install for the operator's
// certificate: its namespace, the empty Secret, its generated roles (bound
// to operatorUser) and the webhook configurations, calling the operator at
// https://localhost:<its port>.
func installForOperator(ctx context.Context, w operator.WebhookOptions) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.Namespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Secret}},
	}
	roles, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		return err
	}
	rbac, err := kube.DecodeManifests(roles)
	if err != nil {
		return err
	}
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: operatorUser}}
	for _, r := range rbac {
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: r.GetKind(), Name: r.GetName()}
		objs = append(objs, r)
		if r.GetKind() == "ClusterRole" {
			objs = append(objs, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r.GetName()}, RoleRef: ref, Subjects: subjects})
		} else {
			objs = append(objs, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: r.GetNamespace(), Name: r.GetName()}, RoleRef: ref, Subjects: subjects})
		}
	}
	hooks, err := kube.WebhookConfigurationsAt(fmt.Sprintf("https://localhost:%d", w.Port), nil)
	if err != nil {
		return err
	}
	for _, h := range hooks {
		objs = append(objs, h)
	}
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	return nil
}

// mountSecret stands in for the kubelet of the operator's pod, which
// mounts the Secret at the cert dir: until ctx ends it writes the Secret's
// certificate there whenever the Secret changes, each file replaced whole
// and the key before the certificate (the server reads the certificate's
// arrival as the pair's). A Secret without a certificate leaves the last
// one (where the kubelet would remove the files, the server keeps serving
// what it read either way).
func mountSecret(ctx context.Context, namespace, name, dir string) error {
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	write := func(obj any) {
		s := obj.(*corev1.Secret)
		if len(s.Data[corev1.TLSCertKey]) == 0 || len(s.Data[corev1.TLSPrivateKeyKey]) == 0 {
			return
		}
		for _, k := range []string{corev1.TLSPrivateKeyKey, corev1.TLSCertKey} {
			tmp := filepath.Join(dir, "."+k)
			err := os.WriteFile(tmp, s.Data[k], 0o600)
			if err == nil {
				err = os.Rename(tmp, filepath.Join(dir, k))
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "mounting the Secret %s/%s: %v\n", namespace, name, err)
			}
		}
	}
	_, err = factory.Core().V1().Secrets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    write,
		UpdateFunc: func(_, obj any) { write(obj) },
	})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	return nil
}

// get fetches url, returning its status code and body (0 when unreachable).
func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// freePort is a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
