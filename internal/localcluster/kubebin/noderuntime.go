package kubebin

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/paddlejob/paddlejob/internal/fsutil"
)

// The container-runtime node (`paddlejob up --node-runtime=containerd`) runs
// the real kubelet with containerd, runc and the CNI reference plugins, each
// built from its Go module at the version pinned here, beside the control
// plane's Kubernetes release.
const containerdVersion = "v2.4.2"

var (
	Containerd = Addon{
		Name: "containerd", Module: "github.com/containerd/containerd/v2", Version: containerdVersion,
		Binaries: map[string]string{
			"containerd":              "github.com/containerd/containerd/v2/cmd/containerd",
			"containerd-shim-runc-v2": "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
			"ctr":                     "github.com/containerd/containerd/v2/cmd/ctr",
		},
		// What the Node's containerRuntimeVersion shows.
		LDFlags: "-X github.com/containerd/containerd/v2/version.Version=" + strings.TrimPrefix(containerdVersion, "v"),
	}
	// Runc's seccomp support is libseccomp's (cgo): without it a pod's
	// RuntimeDefault profile cannot be applied.
	Runc = Addon{
		Name: "runc", Module: "github.com/opencontainers/runc", Version: "v1.5.3",
		Binaries: map[string]string{"runc": "github.com/opencontainers/runc"},
		Cgo:      true, Tags: "seccomp",
	}
	CNIPlugins = Addon{
		Name: "cni-plugins", Module: "github.com/containernetworking/plugins", Version: "v1.7.1",
		Binaries: map[string]string{
			"bridge":     "github.com/containernetworking/plugins/plugins/main/bridge",
			"loopback":   "github.com/containernetworking/plugins/plugins/main/loopback",
			"host-local": "github.com/containernetworking/plugins/plugins/ipam/host-local",
			"portmap":    "github.com/containernetworking/plugins/plugins/meta/portmap",
		},
	}
)

// NodeRuntime says where the container-runtime node's binaries are.
type NodeRuntime struct {
	// Kubelet is the kubelet binary.
	Kubelet string
	// Bin holds containerd, containerd-shim-runc-v2, ctr and runc.
	Bin []string
	// CNIBin holds the CNI plugins, as containerd's cni bin_dirs names it.
	CNIBin string
	// Pause is the sandbox image's program, static.
	Pause string
}

// Binary is the path of one of the node runtime's binaries in Bin.
func (n NodeRuntime) Binary(name string) string {
	for _, d := range n.Bin {
		if hasAll(d, []string{name}) {
			return filepath.Join(d, name)
		}
	}
	return ""
}

// EnsureNodeRuntime returns the container-runtime node's binaries, building
// the missing ones into the cache first; safe to call from several processes
// at once, like Ensure.
func EnsureNodeRuntime(ctx context.Context, opts Options) (NodeRuntime, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	kubeDir, err := Ensure(ctx, opts, Kubelet)
	if err != nil {
		return NodeRuntime{}, err
	}
	n := NodeRuntime{Kubelet: filepath.Join(kubeDir, Kubelet)}
	for _, a := range []Addon{Containerd, Runc, CNIPlugins} {
		dir, err := ensureAddon(ctx, opts, a)
		if err != nil {
			return NodeRuntime{}, fmt.Errorf("the container-runtime node's %s: %w", a.Name, err)
		}
		if a.Name == CNIPlugins.Name {
			n.CNIBin = dir
		} else {
			n.Bin = append(n.Bin, dir)
		}
	}
	if n.Pause, err = ensurePause(ctx, opts); err != nil {
		return NodeRuntime{}, err
	}
	return n, nil
}

// pauseMain is the sandbox (pause) image's program: a pod's first process,
// which holds its namespaces, reaps the orphans a shared PID namespace hands
// it, and exits on SIGINT or SIGTERM, as Kubernetes' own pause does.
const pauseMain = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			if pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
`

// ensurePause builds the pause program into dir (static: the sandbox
// image holds nothing else).
func ensurePause(ctx context.Context, opts Options) (string, error) {
	b := &builder{cache: opts.cacheDir(), log: opts.Log}
	sum := sha256.Sum256([]byte(pauseMain))
	b.binDir = filepath.Join(opts.cacheDir(), "addons", fmt.Sprintf("pause-%x", sum[:4]))
	if hasAll(b.binDir, []string{"pause"}) {
		return filepath.Join(b.binDir, "pause"), nil
	}
	if err := os.MkdirAll(b.binDir, 0o755); err != nil {
		return "", err
	}
	unlock, err := fsutil.Lock(filepath.Join(b.binDir, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if !hasAll(b.binDir, []string{"pause"}) {
		modDir, err := b.writeModule("pause", "module paddlejob.local/pause\n\ngo 1.25.0\n", "main.go", pauseMain)
		if err != nil {
			return "", err
		}
		if err := b.goBuild(ctx, modDir, ".", "pause", "the sandbox image's program", "-s -w"); err != nil {
			return "", err
		}
	}
	return filepath.Join(b.binDir, "pause"), nil
}
