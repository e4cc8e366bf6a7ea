package kubebin

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/paddlejob/paddlejob/internal/fsutil"
)

// Add-ons are components a local cluster runs only when asked (`up --with`):
// gang schedulers and queueing built from their own Go modules. Each pins
// its own Kubernetes line, so each gets its own wrapper module, which
// requires the add-on's module and repeats the replace directives of the
// add-on's go.mod (the Go command ignores a dependency's replaces).
const (
	AddonVolcano      = "volcano"
	AddonCoscheduling = "coscheduling"
	AddonKueue        = "kueue"
)

// Addon says how one add-on is built and which of its module's files the
// cluster installs.
type Addon struct {
	Name    string
	Module  string
	Version string
	// Binaries maps each binary's file name to its main package.
	Binaries map[string]string
	// Files are paths inside the module (CRDs, webhook configurations)
	// kept beside the binaries, under files/.
	Files []string
	// Replace overrides replace directives of the module's go.mod, for
	// versions the module proxy does not serve.
	Replace map[string]string
	// Main, when set, is the source of the main package the binary is
	// built from instead (Binaries then names the wrapper module itself,
	// "."): CoreDNS with only the plugins the cluster uses.
	Main string
	// Cgo builds with cgo and these build tags (runc's seccomp filter is
	// libseccomp's); every other build is CGO_ENABLED=0.
	Cgo  bool
	Tags string
	// LDFlags are added to the link's -s -w: version stamps.
	LDFlags string
}

// Pinned add-on versions: the only place they are written down.
//
// scheduler-plugins is pinned at v0.33.5, not the v0.31.8 first asked for:
// the module proxy answers 403 "This module version is not available" for
// seventeen of the k8s.io v0.31.8 modules v0.31.8 replaces to (cloud-provider,
// csi-translation-lib, dynamic-resource-allocation, kubelet, mount-utils, kms,
// cri-api, controller-manager among those its scheduler needs), and for many
// of their neighbouring patch releases; v0.33.5's are all served but four its
// scheduler does not use.
var Addons = map[string]Addon{
	AddonVolcano: {
		Name: AddonVolcano, Module: "volcano.sh/volcano", Version: "v1.10.0",
		Binaries: map[string]string{"vc-scheduler": "volcano.sh/volcano/cmd/scheduler"},
		// The scheduler waits for a watch on Numatopologies before its first
		// session.
		Files: []string{
			"config/crd/volcano/bases/nodeinfo.volcano.sh_numatopologies.yaml",
			"config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml",
			"config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml",
		},
	},
	AddonCoscheduling: {
		Name: AddonCoscheduling, Module: "sigs.k8s.io/scheduler-plugins", Version: "v0.33.5",
		Binaries: map[string]string{"scheduler-plugins-scheduler": "sigs.k8s.io/scheduler-plugins/cmd/scheduler"},
		Files:    []string{"config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"},
	},
	AddonKueue: {
		Name: AddonKueue, Module: "sigs.k8s.io/kueue", Version: "v0.19.2",
		Binaries: map[string]string{"kueue-manager": "sigs.k8s.io/kueue/cmd/kueue"},
		Files: []string{
			"config/components/crd/bases/kueue.x-k8s.io_admissionchecks.yaml",
			"config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml",
			"config/components/crd/bases/kueue.x-k8s.io_cohorts.yaml",
			"config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml",
			"config/components/crd/bases/kueue.x-k8s.io_multikueueclusters.yaml",
			"config/components/crd/bases/kueue.x-k8s.io_multikueueconfigs.yaml",
			"config/components/crd/bases/kueue.x-k8s.io_provisioningrequestconfigs.yaml",
			"config/components/crd/bases/kueue.x-k8s.io_resourceflavors.yaml",
			"config/components/crd/bases/kueue.x-k8s.io_topologies.yaml",
			"config/components/crd/bases/kueue.x-k8s.io_workloadpriorityclasses.yaml",
			"config/components/crd/bases/kueue.x-k8s.io_workloads.yaml",
			"config/components/webhook/manifests.yaml",
		},
	},
}

// ClusterDNS is the cluster's DNS server, CoreDNS with its kubernetes
// plugin, which every local cluster runs (kubeadm calls it an add-on too; it
// is not one of the optional add-ons of AddonNames). It is linked with
// ClusterDNSPlugins only: CoreDNS's own main links all 54 of its plugins,
// the cloud providers' SDKs among them, and compiling those was most of a
// fresh machine's CoreDNS build.
var ClusterDNS = Addon{
	Name: "coredns", Module: "github.com/coredns/coredns", Version: "v1.12.4",
	Binaries: map[string]string{"coredns": "."},
	Main:     coreDNSMain(ClusterDNSPlugins),
}

// ClusterDNSPlugins are the CoreDNS plugins the cluster's Corefile uses
// (node/clusterdns.go): a directive of any other plugin is refused at start.
var ClusterDNSPlugins = []string{"bind", "cache", "errors", "kubernetes", "ready", "template"}

// coreDNSMain is the source of a CoreDNS main package that registers the
// given plugins, as CoreDNS's main does with all of them (core/plugin).
func coreDNSMain(plugins []string) string {
	var src strings.Builder
	src.WriteString("// Generated by paddlejob: CoreDNS with the local cluster's plugins only.\npackage main\n\nimport (\n")
	for _, p := range plugins {
		fmt.Fprintf(&src, "\t_ \"github.com/coredns/coredns/plugin/%s\"\n", p)
	}
	src.WriteString("\n\t\"github.com/coredns/coredns/coremain\"\n)\n\nfunc main() { coremain.Run() }\n")
	return src.String()
}

// AddonNames are the add-ons, in the order a cluster starts them.
var AddonNames = []string{AddonVolcano, AddonCoscheduling, AddonKueue}

// File is the path of one of an add-on's Files in the directory
// EnsureAddon returned.
func (a Addon) File(dir, path string) string { return filepath.Join(dir, "files", path) }

// EnsureAddon returns a directory holding an add-on's binaries and, under
// files/, the module files it names, building them into the cache first when
// missing. Like Ensure it is idempotent and safe to call from several
// processes at once.
func EnsureAddon(ctx context.Context, opts Options, name string) (string, error) {
	a, ok := Addons[name]
	if !ok {
		return "", fmt.Errorf("unknown add-on %q (known: %s)", name, strings.Join(AddonNames, ", "))
	}
	return ensureAddon(ctx, opts, a)
}

// EnsureClusterDNS returns a directory holding ClusterDNS's binary: the
// first of opts.Dirs that has one, else its build in the cache, built first
// when missing.
func EnsureClusterDNS(ctx context.Context, opts Options) (string, error) {
	for _, d := range opts.Dirs {
		if d != "" && hasAll(d, slices.Collect(maps.Keys(ClusterDNS.Binaries))) {
			return d, nil
		}
	}
	return ensureAddon(ctx, opts, ClusterDNS)
}

func ensureAddon(ctx context.Context, opts Options, a Addon) (string, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	dir := filepath.Join(opts.cacheDir(), "addons", a.cacheName())
	if addonComplete(a, dir) {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := fsutil.Lock(filepath.Join(dir, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if addonComplete(a, dir) { // another process built it meanwhile
		return dir, nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", fmt.Errorf("building the %s add-on needs the Go toolchain (go on PATH): %w", a.Name, err)
	}
	b := &builder{cache: opts.cacheDir(), binDir: dir, log: opts.Log}
	modDir, src, err := b.addonModule(ctx, a)
	if err != nil {
		return "", err
	}
	for _, f := range a.Files {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", fmt.Errorf("%s %s has no %s: %w", a.Module, a.Version, f, err)
		}
		if err := os.MkdirAll(filepath.Dir(a.File(dir, f)), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(a.File(dir, f), data, 0o644); err != nil {
			return "", err
		}
	}
	for _, bin := range slices.Sorted(maps.Keys(a.Binaries)) {
		if hasAll(dir, []string{bin}) {
			continue
		}
		if err := b.goBuildWith(ctx, modDir, a.Binaries[bin], bin, a.Module+" "+a.Version, strings.TrimSpace("-s -w "+a.LDFlags), a.buildFlags()); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// cacheName names an add-on's build in the cache: its version, and a digest
// of its Main when it has one, so that another plugin set is another build.
func (a Addon) cacheName() string {
	if a.Main == "" {
		return a.Name + "-" + a.Version
	}
	sum := sha256.Sum256([]byte(a.Main))
	return fmt.Sprintf("%s-%s-%x", a.Name, a.Version, sum[:4])
}

func addonComplete(a Addon, dir string) bool {
	if !hasAll(dir, slices.Collect(maps.Keys(a.Binaries))) {
		return false
	}
	for _, f := range a.Files {
		if _, err := os.Stat(a.File(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// addonModule writes an add-on's wrapper module and returns it and the
// directory of the add-on's module source.
func (b *builder) addonModule(ctx context.Context, a Addon) (modDir, src string, err error) {
	name := a.Name + "-" + a.Version
	// A bare module first, to download the add-on's module and read its go.mod.
	modDir, err = b.writeModule(name, fmt.Sprintf("module paddlejob.local/%s\n\ngo 1.26.0\n", a.Name), "", "")
	if err != nil {
		return "", "", err
	}
	fmt.Fprintf(b.log, "downloading %s %s...\n", a.Module, a.Version)
	var dl struct{ Dir, GoMod, Error string }
	if err := goJSON(ctx, modDir, &dl, "mod", "download", "-json", a.Module+"@"+a.Version); err != nil {
		return "", "", fmt.Errorf("downloading %s %s: %w", a.Module, a.Version, err)
	}
	if dl.Error != "" {
		return "", "", fmt.Errorf("downloading %s %s: %s", a.Module, a.Version, dl.Error)
	}
	var upstream struct {
		Replace []struct {
			Old, New struct{ Path, Version string }
		}
	}
	if err := goJSON(ctx, modDir, &upstream, "mod", "edit", "-json", dl.GoMod); err != nil {
		return "", "", fmt.Errorf("reading %s's go.mod: %w", a.Module, err)
	}
	var gomod strings.Builder
	fmt.Fprintf(&gomod, "module paddlejob.local/%s\n\ngo 1.26.0\n\nrequire %s %s\n\n", a.Name, a.Module, a.Version)
	for _, r := range upstream.Replace {
		if r.New.Version == "" { // a directory of the add-on's own repository
			continue
		}
		version := r.New.Version
		if v, ok := a.Replace[r.Old.Path]; ok {
			version = v
		}
		old := r.Old.Path
		if r.Old.Version != "" {
			old += " " + r.Old.Version
		}
		fmt.Fprintf(&gomod, "replace %s => %s %s\n", old, r.New.Path, version)
	}
	mainFile := ""
	if a.Main != "" {
		mainFile = "main.go"
	}
	modDir, err = b.writeModule(name, gomod.String(), mainFile, a.Main)
	return modDir, dl.Dir, err
}

// goJSON runs a go command in dir and decodes its JSON output into v.
func goJSON(ctx context.Context, dir string, v any, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = buildEnv()
	var stderr tailBuffer
	stderr.max = 4 << 10
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if jerr := json.Unmarshal(out, v); jerr != nil {
		if err == nil {
			err = jerr
		}
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return nil
}

// buildEnv is the environment of every go command of the builder: the
// flags must not change between runs, as CGO_ENABLED is part of the Go
// build cache key and a mismatch rebuilds everything. The checksum database
// does not know some k8s.io modules, nor kueue's scheduler-library.
func buildEnv() []string {
	return append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod",
		"GONOSUMDB=k8s.io,sigs.k8s.io/scheduler-library,"+os.Getenv("GONOSUMDB"))
}

// buildFlags are the settings of one build that differ from buildEnv's.
type buildFlags struct {
	cgo  bool
	tags string
}

func (a Addon) buildFlags() buildFlags { return buildFlags{cgo: a.Cgo, tags: a.Tags} }

// goBuild builds one main package of modDir into the builder's binDir.
func (b *builder) goBuild(ctx context.Context, modDir, pkg, bin, what, ldflags string) error {
	return b.goBuildWith(ctx, modDir, pkg, bin, what, ldflags, buildFlags{})
}

func (b *builder) goBuildWith(ctx context.Context, modDir, pkg, bin, what, ldflags string, f buildFlags) error {
	fmt.Fprintf(b.log, "building %s (%s) from Go modules (once; cached in %s)...\n", bin, what, b.binDir)
	start := time.Now()
	tmp := filepath.Join(b.binDir, "."+bin+".tmp")
	args := []string{"build", "-trimpath", "-ldflags", ldflags, "-o", tmp}
	if f.tags != "" {
		args = append(args, "-tags", f.tags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Dir = modDir
	cmd.Env = buildEnv()
	if f.cgo {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=1")
	}
	out := &tailBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	done := make(chan struct{})
	go b.progress(bin, start, done)
	err := cmd.Run()
	close(done)
	if err != nil {
		return fmt.Errorf("building %s (%s) failed: %w\n%s", bin, what, err, out.String())
	}
	if err := os.Rename(tmp, filepath.Join(b.binDir, bin)); err != nil {
		return err
	}
	fmt.Fprintf(b.log, "built %s in %s\n", bin, time.Since(start).Round(time.Second))
	return nil
}
