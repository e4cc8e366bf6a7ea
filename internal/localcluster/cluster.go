package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/paddlejob/paddlejob/internal/fsutil"
)

// NodeName is the name of the local cluster's first node; the others are
// NodeName-2, NodeName-3...
const NodeName = "paddlejob-node"

// Options configure a local cluster.
type Options struct {
	// Home is the state directory; DefaultHome() when empty.
	Home string
	// BinaryDirs are directories to take the control-plane binaries from
	// before building them.
	BinaryDirs []string
	// Executable is the paddlejob binary that runs the operator and the node;
	// the running executable when empty.
	Executable string
	// ImageTable is a user image table merged over the built-in one.
	ImageTable string
	// NoOperator starts the cluster without the operator (and its webhook),
	// for installing it into the cluster as on a real one.
	NoOperator bool
	// Nodes is how many nodes the cluster has, 1 (when 0) to MaxNodes: each
	// a process with a network of its own, joined by the cluster network.
	Nodes int
	// GPUs is how many nvidia.com/gpu each node advertises. They are
	// emulated: GPU pods schedule and run on the CPU.
	GPUs int
	// NodeLabels are labels of the node, for jobs that select nodes.
	NodeLabels map[string]string
	// Capacity is what the node advertises instead of the host's CPUs and
	// memory, NAME=QUANTITY,... (e.g. cpu=64,memory=256Gi), so that jobs
	// sized for a real cluster schedule: the scheduler then overcommits the
	// machine. Empty: the host's own.
	Capacity string
	// PaddleRuntime names a Paddle runtime to use instead of the pinned
	// ones of the cache (paddleruntime.EnvDir): every Paddle image then
	// runs on it. The pinned ones are installed by the node when a pod
	// first needs one (node/paddlepull.go).
	PaddleRuntime string
	// HostPathRO and HostPathRW are the host directories pods may mount,
	// read-only and read-write, through hostPath volumes (and hostPath or
	// local PersistentVolumes): the paths inside them. Besides them pods
	// may mount only the build contexts (read-only) and their output/
	// (read-write); no host path may be, hold or lie in the cluster's home,
	// hold a kubeconfig (KubeconfigFiles) or the host's /proc, /sys, /dev.
	HostPathRO []string
	HostPathRW []string
	// PodSecurity is the PodSecurity level enforced in every namespace
	// that names none (podsecurity.go): privileged, baseline (the
	// default) or restricted. The default namespace is privileged.
	PodSecurity string
	// With names the add-ons to run besides the control plane (see
	// ParseAddons): volcano, coscheduling, kueue.
	With []string
	// UserKubeconfig, when set, is the kubeconfig (the user's: $KUBECONFIG
	// or ~/.kube/config) Up adds the cluster's context to and makes it
	// current, unless KeepContext; Down removes it and makes the previous
	// context current again (kubecontext.go). Nil leaves every kubeconfig
	// but the cluster's own alone.
	UserKubeconfig clientcmd.ConfigAccess
	KeepContext    bool
	// NodeRuntime is what runs the nodes' pods: NodeRuntimeProcess (the
	// default: the process node, pods as sandboxed processes) or
	// NodeRuntimeContainerd (the real kubelet with containerd and runc;
	// root only).
	NodeRuntime string
	// Out receives progress.
	Out io.Writer
}

// The node runtimes `up --node-runtime` takes.
const (
	NodeRuntimeProcess    = "process"
	NodeRuntimeContainerd = "containerd"
)

// NodeRuntimes are the values of Options.NodeRuntime.
var NodeRuntimes = []string{NodeRuntimeProcess, NodeRuntimeContainerd}

func (o *Options) complete() error {
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.Nodes < 1 || o.Nodes > MaxNodes {
		return fmt.Errorf("--nodes %d: a local cluster has 1 to %d nodes", o.Nodes, MaxNodes)
	}
	if err := CheckNodeRuntime(o.NodeRuntime); err != nil {
		return err
	}
	if o.Home == "" {
		o.Home = DefaultHome()
	}
	abs, err := filepath.Abs(o.Home)
	if err != nil {
		return err
	}
	o.Home = abs
	if o.PodSecurity == "" {
		o.PodSecurity = DefaultPodSecurity
	}
	if err := CheckPodSecurityLevel(o.PodSecurity); err != nil {
		return err
	}
	for _, dirs := range []*[]string{&o.HostPathRO, &o.HostPathRW} {
		if *dirs, err = absoluteDirs(*dirs); err != nil {
			return err
		}
	}
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the paddlejob executable: %w", err)
		}
		o.Executable = exe
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	with, err := ParseAddons(o.With)
	if err != nil {
		return err
	}
	o.With = with
	return nil
}

// Up starts the local cluster, or returns the running one. A cluster whose
// processes died is cleaned up and started afresh.
func Up(ctx context.Context, opts Options) (*State, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	l := layout{opts.Home}
	if err := claimHome(l); err != nil {
		return nil, err
	}
	unlock, err := fsutil.Lock(l.lockFile())
	if err != nil {
		return nil, err
	}
	defer unlock()

	if st, err := readState(l); err == nil {
		if healthy(ctx, st) {
			if missing := slices.DeleteFunc(slices.Clone(opts.With), func(a string) bool { return slices.Contains(st.With, a) }); len(missing) > 0 {
				return nil, fmt.Errorf("the local cluster in %s already runs without %s: stop it (paddlejob down) and start it again with them",
					l.home, strings.Join(missing, ", "))
			}
			if diffs := st.Settings.differences(opts.settings()); len(diffs) > 0 {
				return nil, fmt.Errorf("the local cluster in %s already runs with other settings: %s; stop it (paddlejob down) and start it again with them",
					l.home, strings.Join(diffs, "; "))
			}
			fmt.Fprintf(opts.Out, "local cluster already running (%s)\n", st.Server())
			if !etcdPeersUseTLS(l) {
				fmt.Fprintln(opts.Out, "note: an earlier paddlejob started it, and its etcds' peer ports take plain HTTP from any process of this machine, pods included: `paddlejob down` then `paddlejob up` restarts it with TLS peers")
			}
			return st, registerContext(opts, st)
		}
		fmt.Fprintln(opts.Out, "a previous local cluster is not healthy: stopping what is left of it")
		if err := stopAll(st, opts.Out); err != nil {
			return nil, err
		}
	}
	if err := wipe(l); err != nil {
		return nil, err
	}
	if err := checkSandbox(); err != nil {
		return nil, err
	}
	if err := createExamplesDir(ExamplesDir, opts.HostPathRW); err != nil {
		return nil, err
	}
	fmt.Fprintln(opts.Out, "starting a local cluster in", l.home)
	pre, err := prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	b := &boot{opts: opts, l: l, bins: pre.bins, paddle: pre.paddle, addons: pre.addons, clusterDNS: pre.clusterDNS,
		nodeRuntime: pre.nodeRuntime, nodeImages: pre.nodeImages}
	st, err := b.run(ctx)
	if err != nil {
		if st != nil {
			_ = stopAll(st, io.Discard)
		}
		return nil, fmt.Errorf("%w (component logs are in %s)", err, l.logs())
	}
	return st, registerContext(opts, st)
}

// unregisterContext removes the cluster's context from the user's
// kubeconfig, when asked to, and says so.
func unregisterContext(opts Options) error {
	if opts.UserKubeconfig == nil {
		return nil
	}
	change, err := removeContext(opts.UserKubeconfig, opts.Home)
	if err != nil || !change.MadeCurrent {
		return err
	}
	now := "no context is current"
	if change.Previous != "" {
		now = fmt.Sprintf("%q is current again", change.Previous)
	}
	fmt.Fprintf(opts.Out, "kubeconfig %s: context %q removed; %s\n", change.File, change.Name, now)
	return nil
}

// registerContext adds the cluster's context to the user's kubeconfig, when
// asked to, and says so.
func registerContext(opts Options, st *State) error {
	if opts.UserKubeconfig == nil {
		return nil
	}
	change, err := addContext(opts.UserKubeconfig, st, opts.KeepContext)
	if err != nil {
		return err
	}
	switch {
	case !change.MadeCurrent:
		fmt.Fprintf(opts.Out, "kubeconfig %s: context %q added; the current context is unchanged\n", change.File, change.Name)
	case change.Previous != "" && change.Previous != change.Name:
		fmt.Fprintf(opts.Out, "kubeconfig %s: context %q added and made current (%q was; paddlejob down makes it current again)\n", change.File, change.Name, change.Previous)
	default:
		fmt.Fprintf(opts.Out, "kubeconfig %s: context %q added and made current\n", change.File, change.Name)
	}
	return nil
}

// Down stops every process of the local cluster — its pods with the node —
// checks that none is left and no port still listens, and removes the state
// directory.
func Down(opts Options) error {
	if err := opts.complete(); err != nil {
		return err
	}
	l := layout{opts.Home}
	if _, err := os.Stat(l.home); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(opts.Out, "no local cluster in", l.home)
		return unregisterContext(opts) // a context left behind points nowhere
	}
	if !isHome(l) {
		return fmt.Errorf("%s is not a local cluster's state directory (no %s): nothing was stopped or removed%s", l.home, homeMarker, olderHomeHint(l))
	}
	unlock, err := fsutil.Lock(l.lockFile())
	if err != nil {
		return err
	}
	defer unlock()
	if st, err := readState(l); err == nil {
		if err := stopAll(st, opts.Out); err != nil {
			return err
		}
		cleanUpRuntimeNodes(l)
		for _, port := range st.Ports.All() {
			if portOpen(port) {
				return fmt.Errorf("port %d still listens after stopping the cluster", port)
			}
		}
	}
	if err := unregisterContext(opts); err != nil {
		return err
	}
	if err := os.RemoveAll(l.home); err != nil {
		return fmt.Errorf("removing %s: %w", l.home, err)
	}
	fmt.Fprintln(opts.Out, "local cluster stopped; removed", l.home)
	return nil
}

// homeMarker marks a directory Up created as a cluster's state: Down
// removes only such a directory, Up uses only such a one or an empty one.
const homeMarker = ".paddlejob-home"

// isHome reports whether l.home is a cluster's state directory: it holds
// the marker, a regular file. Nothing else counts, not even the cluster's
// state file: a directory holding only a cluster.json (copied, or written
// there by anyone) is someone's, and Down would remove it.
func isHome(l layout) bool {
	fi, err := os.Lstat(filepath.Join(l.home, homeMarker))
	return err == nil && fi.Mode().IsRegular()
}

// claimHome makes l.home a cluster's state directory: a new or empty
// directory gets the marker; one holding anything else is refused, since
// Up wipes parts of it and Down removes it.
func claimHome(l layout) error {
	if isHome(l) {
		return nil
	}
	entries, err := os.ReadDir(l.home)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(l.home, 0o700); err != nil {
			return err
		}
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s is not a local cluster's state directory (it holds %s and no %s): give --home a new or empty directory; nothing was changed%s",
			l.home, entries[0].Name(), homeMarker, olderHomeHint(l))
	}
	return os.WriteFile(filepath.Join(l.home, homeMarker), []byte("The state of a paddlejob local cluster: `paddlejob down` removes this directory.\n"), 0o600)
}

// olderHomeHint tells the user of a cluster started before the marker
// existed how to claim its directory: only they can tell it is one.
func olderHomeHint(l layout) string {
	if _, err := os.Stat(l.stateFile()); err != nil {
		return ""
	}
	return fmt.Sprintf(" (if it is the state of a cluster started by an older paddlejob, create the marker: touch %s)", filepath.Join(l.home, homeMarker))
}

// Running returns the state of a healthy running cluster, or an error saying
// there is none.
func Running(ctx context.Context, opts Options) (*State, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	st, err := readState(layout{opts.Home})
	if err != nil {
		return nil, errNotRunning
	}
	if !healthy(ctx, st) {
		return nil, fmt.Errorf("the local cluster in %s is not healthy: run `paddlejob down` then `paddlejob up`", opts.Home)
	}
	return st, nil
}

// KubeconfigPath is where a cluster in home keeps its admin kubeconfig.
func KubeconfigPath(home string) string {
	if home == "" {
		home = DefaultHome()
	}
	return layout{home}.kubeconfig()
}

// stopAll stops the cluster's processes, the node (and with it every pod)
// first and etcd last.
func stopAll(st *State, out io.Writer) error {
	var errs []error
	for _, p := range slices.Backward(st.Processes) {
		if !p.alive() {
			continue
		}
		fmt.Fprintf(out, "  stopping %s (pid %d)\n", p.Name, p.PID)
		grace := 10 * time.Second
		if isNode(p.Name) {
			grace = 40 * time.Second // it stops its pods first
		}
		if err := p.stop(grace); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func wipe(l layout) error {
	for _, dir := range []string{l.pki(), l.logs(), l.etcdData(), l.nodesState(), l.elasticEtcdData()} {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	for _, f := range []string{l.kubeconfig(), l.stateFile(), l.imageTable()} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// checkSandbox makes sure bubblewrap is there before minutes are spent
// building: every pod needs it.
func checkSandbox() error {
	if _, err := exec.LookPath("bwrap"); err != nil {
		return errors.New("bubblewrap (bwrap) is not installed: the local cluster runs every pod in a bubblewrap sandbox. " +
			"Install the Debian/Ubuntu package `bubblewrap` (sudo apt-get install bubblewrap, or run hack/setup.sh)")
	}
	return nil
}

func itoa(i int) string { return strconv.Itoa(i) }

// Restart stops one component of a running cluster (its pods too, for the
// node) and starts it again with the same arguments — what an operator
// restart or upgrade looks like to the jobs.
func Restart(ctx context.Context, opts Options, component string) error {
	if err := opts.complete(); err != nil {
		return err
	}
	l := layout{opts.Home}
	unlock, err := fsutil.Lock(l.lockFile())
	if err != nil {
		return err
	}
	defer unlock()
	st, err := readState(l)
	if err != nil {
		return errNotRunning
	}
	for i, p := range st.Processes {
		if p.Name != component {
			continue
		}
		if err := p.stop(40 * time.Second); err != nil {
			return err
		}
		restarted, err := startProcess(opts.Executable, p.Name, p.Args, p.Env, l.logs())
		if err != nil {
			return err
		}
		st.Processes[i] = restarted
		return writeState(l, st)
	}
	return fmt.Errorf("the local cluster has no component %q", component)
}
