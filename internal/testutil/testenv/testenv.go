package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
)

// Env is a running control plane.
type Env struct {
	*envtest.Environment
	Config *rest.Config
}

// Start starts etcd and kube-apiserver with the PaddleJob CRD (and any extra
// CRD directories) installed.
func Start(extraCRDDirs ...string) (*Env, error) { return StartWith(nil, extraCRDDirs...) }

// StartWith is Start with the admission webhooks of webhookDirs installed,
// pointing at a local server envtest prepares certificates for (see
// Env.WebhookInstallOptions).
func StartWith(webhookDirs []string, extraCRDDirs ...string) (*Env, error) {
	return StartOpts(Options{WebhookDirs: webhookDirs, ExtraCRDDirs: extraCRDDirs})
}

// Options are what StartOpts starts.
type Options struct {
	// WebhookDirs hold admission webhook configurations to install.
	WebhookDirs []string
	// ExtraCRDDirs hold CRDs to install beside the PaddleJob's.
	ExtraCRDDirs []string
	// AdmissionPlugins are enabled in kube-apiserver beside its defaults
	// (--enable-admission-plugins), e.g. OwnerReferencesPermissionEnforcement.
	AdmissionPlugins []string
}

// StartOpts starts etcd and kube-apiserver as opts say.
func StartOpts(opts Options) (*Env, error) {
	webhookDirs, extraCRDDirs := opts.WebhookDirs, opts.ExtraCRDDirs
	assets, err := kubebin.Ensure(context.Background(), kubebin.Options{
		Dirs: []string{os.Getenv("KUBEBUILDER_ASSETS")},
		Log:  os.Stderr,
	}, kubebin.EnvtestComponents...)
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:        append([]string{filepath.Join(RepoRoot(), "config", "crd", "bases")}, extraCRDDirs...),
		ErrorIfCRDPathMissing:    true,
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: 2 * time.Minute, // two busy cores start it slowly
		ControlPlaneStopTimeout:  time.Minute,
		WebhookInstallOptions:    envtest.WebhookInstallOptions{Paths: webhookDirs},
	}
	if len(opts.AdmissionPlugins) > 0 {
		env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", strings.Join(opts.AdmissionPlugins, ","))
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	return &Env{Environment: env, Config: cfg}, nil
}

// RepoRoot is the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}
