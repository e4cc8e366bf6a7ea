// Package integration tests the operator against a real kube-apiserver and
// etcd. There is no kubelet: tests write pod status the way a kubelet would.
package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zapcore"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

var (
	env *testenv.Env
	// k8s reads and writes straight to the API server, never from a cache.
	k8s       client.Client
	clientset *kubernetes.Clientset
)

func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	var err error
	// OwnerReferencesPermissionEnforcement, as hardened clusters run it: an
	// owner reference that blocks its owner's deletion needs update on the
	// owner's finalizers, which the operator's RBAC test then proves it has.
	env, err = testenv.StartOpts(testenv.Options{
		ExtraCRDDirs:     []string{filepath.Join("testdata", "crds")},
		AdmissionPlugins: []string{"OwnerReferencesPermissionEnforcement"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(paddlev1.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	k8s, err = client.New(env.Config, client.Options{Scheme: scheme})
	if err == nil {
		clientset, err = kubernetes.NewForConfig(env.Config)
	}
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
	}
	os.Exit(code)
}

// startOperator runs the operator as the binary would, until the returned
// function stops it (it is also stopped when the test ends).
func startOperator(t testing.TB, configure ...func(*operator.Options)) (stop func()) {
	t.Helper()
	opts := operator.DefaultOptions()
	opts.MetricsAddr, opts.ProbeAddr = "0", "0"
	opts.Webhook.Port = 0          // the webhook has tests of its own
	opts.SkipNameValidation = true // several managers over the test binary's life
	for _, c := range configure {
		c(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := operator.NewManager(ctx, env.Config, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator stopped with: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// zapLevel keeps the operator's logs out of test output unless
// TEST_OPERATOR_LOGS is set.
func zapLevel() zapcore.Level {
	if os.Getenv("TEST_OPERATOR_LOGS") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}
