package kubebin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/paddlejob/paddlejob/internal/fsutil"
)

// Pinned versions: the only place they are written down. KubernetesVersion's
// staging modules are published as k8s.io/<name> StagingVersion.
const (
	KubernetesVersion = "v1.35.4"
	StagingVersion    = "v0.35.4"
	EtcdVersion       = "v3.6.5"
)

// Component names, which are also the binaries' file names.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeScheduler         = "kube-scheduler"
	KubeControllerManager = "kube-controller-manager"
	// Kubelet is the container-runtime node's (EnsureNodeRuntime), not a
	// control-plane component: no cluster but that node's runs it.
	Kubelet = "kubelet"
)

// AllComponents is what a whole local cluster needs.
var AllComponents = []string{Etcd, KubeAPIServer, KubeScheduler, KubeControllerManager}

// EnvtestComponents is what controller-runtime's envtest needs.
var EnvtestComponents = []string{Etcd, KubeAPIServer}

// stagingModules are the modules k8s.io/kubernetes replaces with ./staging
// directories in its go.mod; the wrapper module points each at its published
// version instead.
var stagingModules = []string{
	"api", "apiextensions-apiserver", "apimachinery", "apiserver", "cli-runtime",
	"client-go", "cloud-provider", "cluster-bootstrap", "code-generator",
	"component-base", "component-helpers", "controller-manager", "cri-api",
	"cri-client", "csi-translation-lib", "dynamic-resource-allocation",
	"endpointslice", "externaljwt", "kms", "kube-aggregator",
	"kube-controller-manager", "kube-proxy", "kube-scheduler", "kubectl",
	"kubelet", "metrics", "mount-utils", "pod-security-admission",
	"sample-apiserver", "sample-cli-plugin", "sample-controller",
}

// Options says where binaries may come from.
type Options struct {
	// Dirs are directories the user named; the first that holds every
	// component asked for is used as is.
	Dirs []string
	// CacheDir holds the built binaries and the build's wrapper modules.
	// Defaults to DefaultCacheDir().
	CacheDir string
	// Log receives progress lines; building takes minutes the first time.
	Log io.Writer
}

// DefaultCacheDir is $PADDLEJOB_CACHE, else <user cache dir>/paddlejob.
func DefaultCacheDir() string {
	if d := os.Getenv("PADDLEJOB_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "paddlejob")
	}
	return filepath.Join(os.TempDir(), "paddlejob-cache")
}

// Ensure returns a directory holding every named component, building the
// missing ones into the cache first. It is safe to call from several processes
// at once: builds are serialised by a lock file.
func Ensure(ctx context.Context, opts Options, components ...string) (string, error) {
	if len(components) == 0 {
		components = AllComponents
	}
	for _, c := range components {
		if !slices.Contains(AllComponents, c) && c != Kubelet {
			return "", fmt.Errorf("unknown control-plane component %q (known: %s)", c, strings.Join(append(AllComponents, Kubelet), ", "))
		}
	}
	if dir, err := Lookup(opts, components...); err == nil {
		return dir, nil
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	cache := opts.cacheDir()
	binDir := binDirIn(cache)
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", err
	}
	unlock, err := fsutil.Lock(filepath.Join(binDir, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()

	b := &builder{cache: cache, binDir: binDir, log: opts.Log}
	for _, c := range components {
		if hasAll(binDir, []string{c}) { // another process may have built it meanwhile
			continue
		}
		if err := b.build(ctx, c); err != nil {
			return "", err
		}
	}
	return binDir, nil
}

func hasAll(dir string, components []string) bool {
	for _, c := range components {
		st, err := os.Stat(filepath.Join(dir, c))
		if err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

type builder struct {
	cache, binDir string
	log           io.Writer
}

func (b *builder) build(ctx context.Context, component string) error {
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Errorf("building %s needs the Go toolchain (go on PATH), or name a directory that already holds %s: %w",
			component, strings.Join(AllComponents, ", "), err)
	}
	var modDir, pkg, ldflags string
	var err error
	if component == Etcd {
		modDir, err = b.etcdModule()
		pkg = "."
		ldflags = "-s -w"
	} else {
		modDir, err = b.kubernetesModule()
		pkg = "k8s.io/kubernetes/cmd/" + component
		ldflags = "-s -w " + kubeVersionLDFlags()
	}
	if err != nil {
		return err
	}
	version := KubernetesVersion
	if component == Etcd {
		version = EtcdVersion
	}
	return b.goBuild(ctx, modDir, pkg, component, version, ldflags)
}

func (b *builder) progress(component string, start time.Time, done <-chan struct{}) {
	t := time.NewTicker(20 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			fmt.Fprintf(b.log, "  still building %s (%s so far; the first build takes a few minutes)\n", component, time.Since(start).Round(time.Second))
		}
	}
}

// kubernetesModule writes the wrapper module that builds k8s.io/kubernetes'
// commands against the published staging modules.
func (b *builder) kubernetesModule() (string, error) {
	var gomod strings.Builder
	fmt.Fprintf(&gomod, "module paddlejob.local/kubernetes\n\ngo 1.25.0\n\nrequire k8s.io/kubernetes %s\n\n", KubernetesVersion)
	for _, m := range stagingModules {
		fmt.Fprintf(&gomod, "replace k8s.io/%s => k8s.io/%s %s\n", m, m, StagingVersion)
	}
	return b.writeModule("kubernetes-"+KubernetesVersion, gomod.String(), "", "")
}

// etcdModule writes a wrapper module whose main runs etcd's server: the
// published etcd modules carry no main package of their own.
func (b *builder) etcdModule() (string, error) {
	gomod := fmt.Sprintf("module paddlejob.local/etcd\n\ngo 1.25.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n", EtcdVersion)
	main := "package main\n\nimport (\n\t\"os\"\n\n\t\"go.etcd.io/etcd/server/v3/etcdmain\"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n"
	return b.writeModule("etcd-"+EtcdVersion, gomod, "main.go", main)
}

func (b *builder) writeModule(name, gomod, file, source string) (string, error) {
	dir := filepath.Join(b.cache, "build", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// go.sum is kept from earlier runs; go.mod is rewritten only when it changed
	// so the module cache lookups stay warm.
	if old, err := os.ReadFile(filepath.Join(dir, "go.mod")); err != nil || !strings.HasPrefix(string(old), gomod) {
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
			return "", err
		}
	}
	if file != "" {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(source), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// kubeVersionLDFlags stamps the version an unstamped build would report as
// v0.0.0-master, which clients fail to parse.
func kubeVersionLDFlags() string {
	minor := strings.Split(strings.TrimPrefix(KubernetesVersion, "v"), ".")[1]
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X "+pkg+".gitVersion="+KubernetesVersion,
			"-X "+pkg+".gitMajor=1",
			"-X "+pkg+".gitMinor="+minor,
			"-X "+pkg+".gitTreeState=clean",
			"-X "+pkg+".gitCommit=0000000000000000000000000000000000000000",
			"-X "+pkg+".buildDate=1970-01-01T00:00:00Z",
		)
	}
	return strings.Join(flags, " ")
}

// tailBuffer keeps the last max bytes written to it: enough of a failed
// build's output to explain it.
type tailBuffer struct {
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }

// ErrNotFound is returned by Lookup when no directory holds the components.
var ErrNotFound = errors.New("control-plane binaries not found")

// Lookup returns a directory that already holds every named component, without
// building anything: the user's directories first, then the cache.
func Lookup(opts Options, components ...string) (string, error) {
	for _, d := range opts.Dirs {
		if d != "" && hasAll(d, components) {
			return d, nil
		}
	}
	if binDir := binDirIn(opts.cacheDir()); hasAll(binDir, components) {
		return binDir, nil
	}
	return "", ErrNotFound
}

func (o Options) cacheDir() string {
	if o.CacheDir != "" {
		return o.CacheDir
	}
	return DefaultCacheDir()
}

// binDirIn names the binaries' directory after the pinned versions, so a
// version change builds anew instead of reusing stale binaries.
func binDirIn(cache string) string {
	return filepath.Join(cache, "control-plane", fmt.Sprintf("kubernetes-%s-etcd-%s", KubernetesVersion, EtcdVersion))
}
