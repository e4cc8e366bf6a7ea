package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

// errNoBwrap explains what to install when bubblewrap is missing.
var errNoBwrap = errors.New("bubblewrap (bwrap) is not installed, so pods cannot start: install the Debian package bubblewrap (apt-get install bubblewrap) or pass --bwrap PATH")

// sandboxRoots are the host directories every sandbox sees, read-only, when
// they exist: the system's programs and libraries. /sys is there for
// programs that read the CPU topology. Nothing of the users' homes, /root,
// /opt, /srv, /var or the cluster's state: a pod sees these, its image's
// directories (ImageEntry.HostPaths) and its own volumes.
var sandboxRoots = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys"}

// etcFiles are the entries of the host's /etc a sandbox sees, read-only,
// when they exist: what a program needs to load libraries, resolve names
// and users, know the time zone and trust certificates. /etc/hosts,
// /etc/hostname and /etc/resolv.conf are the pod's own; the rest of /etc (shadow, ssh keys,
// credentials) stays out.
var etcFiles = []string{
	"/etc/alternatives", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/debian_version",
	"/etc/gai.conf", "/etc/group", "/etc/host.conf", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/localtime", "/etc/lsb-release", "/etc/mime.types", "/etc/nsswitch.conf", "/etc/os-release",
	"/etc/passwd", "/etc/pki", "/etc/protocols", "/etc/services", "/etc/ssl", "/etc/timezone",
}

// infoFD is the descriptor bwrap reports the sandbox's process id on; the
// node passes it as the first of cmd.ExtraFiles.
const infoFD = 3

// mount binds a host path into a sandbox, or makes a symlink there.
type mount struct {
	Source, Target string
	ReadOnly       bool
	// File, when set, is Source opened (O_PATH) and checked: the sandbox
	// binds this descriptor, not the path (see beneath.go).
	File *os.File
	// Symlink, when set, makes Target a symlink holding it instead of a
	// bind: an image's link arrives as a link, resolved inside the sandbox.
	Symlink string
	// IDMap: a writable host path, bound idmapped to the node's range of
	// host ids when its pods run as that range (sandbox_stage.go).
	IDMap bool
}

// sandboxSpec describes one container's sandbox.
type sandboxSpec struct {
	Hostname string
	// HostsFile, HostnameFile and ResolvConfFile are bound over /etc/hosts,
	// /etc/hostname and /etc/resolv.conf.
	HostsFile, HostnameFile, ResolvConfFile string
	Mounts                                  []mount
	WorkingDir                              string
	Argv                                    []string
	// Hidden are host directories the sandbox must not see even where a
	// root would show them (the cluster's state directory): each gets an
	// empty tmpfs. Mount sources under them still work.
	Hidden []string
	// DropCapabilities drops every capability, also those uid 0 would have
	// in the sandbox's user namespace (and root's, on a root node).
	DropCapabilities bool
	// TmpSize and ShmSize are the sizes of the sandbox's /tmp and /dev/shm
	// tmpfs, in bytes; 0 leaves the kernel's default (half the memory).
	TmpSize, ShmSize int64
	// User is who the sandbox's processes are inside their user namespace.
	User sandboxIdentity
	// Seccomp, when set, holds the compiled filter (seccomp.go) bwrap loads
	// before it runs the command.
	Seccomp *os.File
	// BindFD binds the mounts' descriptors (bwrap's --bind-fd, bubblewrap
	// 0.10 or a distribution's backport); without it a mount's File is bound
	// by the path the descriptor has, which checks the source but leaves a
	// window between the check and the bind.
	BindFD bool
}

// firstMountFD is the descriptor of the first mount's File in bwrap: the
// files follow the info descriptor, in the order of sandboxFiles.
const firstMountFD = infoFD + 1

// sandboxSettings are the node's settings of every sandbox.
type sandboxSettings struct {
	// asRoot: the node runs as root, so its sandboxes drop capabilities and
	// run as DefaultSandboxUID (root in the pod) unless the pod says otherwise.
	asRoot bool
	// hostIDs, on a root node, are the host ids its pods run as
	// (sandbox_hostids.go); nil runs them as the node's user.
	hostIDs *sandboxHostIDs
	limits  DefaultLimits
	// node caps all containers together, and each one's memory limit.
	node             NodeLimits
	tmpSize, shmSize int64
}

// sandboxFiles are the descriptors bwrap inherits after the info
// descriptor: the mounts' (only when s.BindFD), then the seccomp filter's.
func sandboxFiles(s sandboxSpec) []*os.File {
	var files []*os.File
	for _, m := range s.Mounts {
		if s.BindFD && m.File != nil && m.Symlink == "" {
			files = append(files, m.File)
		}
	}
	if s.Seccomp != nil {
		files = append(files, s.Seccomp)
	}
	return files
}

// findBwrap returns the bwrap to run: the configured path, else bwrap on PATH.
func findBwrap(configured string) (string, error) {
	if configured != "" {
		if st, err := os.Stat(configured); err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("--bwrap %s is not an executable file: %w", configured, errNoBwrap)
		}
		return configured, nil
	}
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", errNoBwrap
	}
	return p, nil
}

// bwrapBindsFD reports whether the bubblewrap at path binds descriptors
// (--bind-fd: bubblewrap 0.10, or a distribution's backport), asking it once.
func bwrapBindsFD(path string) bool {
	if v, ok := bindFDSupport.Load(path); ok {
		return v.(bool)
	}
	out, _ := exec.Command(path, "--help").CombinedOutput()
	ok := strings.Contains(string(out), "--ro-bind-fd")
	bindFDSupport.Store(path, ok)
	return ok
}

var bindFDSupport sync.Map

// needsCommandBind reports whether an absolute command is outside what the
// sandbox shows anyway: its roots and its mounts.
func needsCommandBind(command string, mounts []mount) bool {
	if !path.IsAbs(command) || underAny(command, sandboxRoots) {
		return false
	}
	for _, m := range mounts {
		if isUnder(command, path.Clean("/"+m.Target)) {
			return false
		}
	}
	return true
}

// bwrapArgs builds the bwrap command line of a sandbox: an empty tmpfs root
// with the host roots read-only, private /proc, /dev and /tmp, the pod's hosts
// and hostname files, and its volumes. It shares the host's network (pods are
// told apart by their loopback IPs) but has its own PID namespace, so that
// when the container's main process ends, every process it started ends too.
// host is the host file system rooted at "/".
func bwrapArgs(host fs.FS, s sandboxSpec) []string {
	fds := map[*os.File]int{}
	for i, f := range sandboxFiles(s) {
		fds[f] = firstMountFD + i
	}
	mounts := sortedMounts(s.Mounts)
	targets := []string{"/etc/hosts", "/etc/hostname", "/etc/resolv.conf"}
	var links []string
	for _, m := range mounts {
		targets = append(targets, m.Target)
		if m.Symlink != "" {
			links = append(links, m.Target)
		}
	}

	a := &argList{host: host, links: links}
	a.namespaces(s)
	for _, root := range sandboxRoots {
		a.root(root, targets)
	}
	for _, f := range etcFiles {
		if slices.Contains(links, f) {
			continue // the image's link replaces it
		}
		if _, err := fs.Stat(a.host, rel(f)); err == nil {
			a.add("--ro-bind", f, f)
		}
	}
	for _, h := range s.Hidden {
		if underAny(h, a.boundRoots) || underAny(h, a.expandedRoots) {
			a.add("--tmpfs", h)
		}
	}
	a.add("--proc", "/proc", "--dev", "/dev")
	a.kernelKnobs()
	a.tmpfs("/dev/shm", s.ShmSize)
	a.tmpfs("/tmp", s.TmpSize)
	binds := append([]string(nil), a.boundRoots...)
	a.add("--ro-bind", s.HostsFile, "/etc/hosts", "--ro-bind", s.HostnameFile, "/etc/hostname")
	if s.ResolvConfFile != "" {
		a.add("--ro-bind", s.ResolvConfFile, "/etc/resolv.conf")
	}
	for _, m := range mounts {
		binds = append(binds, m.Target)
		a.mount(m, fds)
	}
	wd := s.WorkingDir
	if wd == "" {
		wd = "/"
	}
	if wd != "/" && !underAny(wd, append(binds, "/proc", "/dev")) && !a.existsInExpanded(wd) {
		a.add("--dir", wd)
	}
	for _, r := range a.expandedRoots {
		a.add("--remount-ro", r)
	}
	a.add("--chdir", wd, "--info-fd", fmt.Sprint(infoFD), "--")
	a.add(s.Argv...)
	return a.args
}

// namespaces are the sandbox's own namespaces and identity: a user
// namespace of its own, also for a root node (the sandbox's user, s.User, is
// mapped to the node's and holds no capability outside), no capabilities
// and the seccomp filter when asked.
func (a *argList) namespaces(s sandboxSpec) {
	a.add("--unshare-user", "--unshare-pid", "--unshare-uts", "--unshare-ipc", "--unshare-cgroup-try",
		"--hostname", s.Hostname, "--die-with-parent", "--new-session")
	if s.User.UID != nil {
		a.add("--uid", fmt.Sprint(*s.User.UID))
	}
	if s.User.GID != nil {
		a.add("--gid", fmt.Sprint(*s.User.GID))
	}
	if s.DropCapabilities {
		a.add("--cap-drop", "ALL")
	}
	if s.Seccomp != nil {
		files := sandboxFiles(s)
		a.add("--seccomp", fmt.Sprint(firstMountFD+len(files)-1))
	}
}

// mount adds one mount: a link as a link, a file opened beneath its root by
// its descriptor (fds: each opened file's descriptor in the sandbox).
func (a *argList) mount(m mount, fds map[*os.File]int) {
	if m.Symlink != "" {
		a.add("--symlink", m.Symlink, m.Target)
		return
	}
	flag, source := "--bind", m.Source
	if fd, ok := fds[m.File]; ok && m.File != nil {
		flag, source = "--bind-fd", fmt.Sprint(fd)
	} else if m.File != nil {
		if p, err := realPath(m.File); err == nil {
			source = p
		}
	}
	if m.ReadOnly {
		flag = strings.Replace(flag, "--bind", "--ro-bind", 1)
	}
	a.add(flag, source, m.Target)
}

// argList accumulates bwrap arguments and what the roots turned into.
type argList struct {
	host fs.FS
	args []string
	// boundRoots are bound whole (or linked); expandedRoots are tmpfs
	// copies, see root.
	boundRoots, expandedRoots []string
	// links are the targets of symlink mounts: the host's entry there is
	// left out of a root, so that the link can be made.
	links []string
}

func (a *argList) add(args ...string) { a.args = append(a.args, args...) }

// tmpfs mounts a world-writable (sticky) tmpfs of size bytes at dir; 0
// leaves the kernel's default size.
func (a *argList) tmpfs(dir string, size int64) {
	a.add("--perms", "1777")
	if size > 0 {
		a.add("--size", fmt.Sprint(size))
	}
	a.add("--tmpfs", dir)
}

// root exposes a host root read-only. Mount points under it that the host
// lacks cannot be created in a read-only bind, so such a root becomes a tmpfs
// holding read-only binds of the host's entries (recursively along the way to
// the missing mount point), remounted read-only once the mounts are made.
func (a *argList) root(root string, targets []string) {
	info, err := fs.Lstat(a.host, rel(root))
	if err != nil {
		return
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		if dest, err := fs.ReadLink(a.host, rel(root)); err == nil {
			a.add("--symlink", dest, root)
			a.boundRoots = append(a.boundRoots, root)
		}
		return
	}
	missing := append(a.missingUnder(root, targets), strictlyUnder(root, a.links)...)
	if !info.IsDir() || len(missing) == 0 {
		a.add("--ro-bind", root, root)
		a.boundRoots = append(a.boundRoots, root)
		return
	}
	a.add("--tmpfs", root)
	a.expandedRoots = append(a.expandedRoots, root)
	a.expand(root, missing)
}

func (a *argList) expand(dir string, missing []string) {
	entries, err := fs.ReadDir(a.host, rel(dir))
	if err != nil {
		return
	}
	for _, e := range entries {
		child := path.Join(dir, e.Name())
		switch under := strictlyUnder(child, missing); {
		case slices.Contains(a.links, child):
			// An image's symlink goes here instead.
		case len(under) > 0 && e.IsDir():
			a.add("--dir", child)
			a.expand(child, under)
		case e.Type()&fs.ModeSymlink != 0:
			if dest, err := fs.ReadLink(a.host, rel(child)); err == nil {
				a.add("--symlink", dest, child)
			}
		default:
			a.add("--ro-bind", child, child)
		}
	}
}

// missingUnder returns the targets strictly under dir that the host lacks.
func (a *argList) missingUnder(dir string, targets []string) []string {
	var missing []string
	for _, t := range strictlyUnder(dir, targets) {
		if _, err := fs.Lstat(a.host, rel(t)); err != nil {
			missing = append(missing, t)
		}
	}
	return missing
}

func (a *argList) existsInExpanded(p string) bool {
	if !underAny(p, a.expandedRoots) {
		return false
	}
	_, err := fs.Stat(a.host, rel(p))
	return err == nil
}

// sortedMounts cleans the targets and orders mounts parents first, so a mount
// nested in another is made after it.
func sortedMounts(mounts []mount) []mount {
	out := make([]mount, len(mounts))
	for i, m := range mounts {
		m.Target = path.Clean("/" + m.Target)
		out[i] = m
	}
	sort.SliceStable(out, func(i, j int) bool { return depth(out[i].Target) < depth(out[j].Target) })
	return out
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// resolveCommand finds a command named without a slash on pathEnv, the
// container's PATH, as the sandbox will see it: a directory of PATH is looked
// up in what is mounted there (the image's files, a volume), else on the
// host. The command's path in the sandbox is returned, so that its directory
// can be exposed when no root covers it; a command not found is returned
// unchanged, for bwrap to look up inside the sandbox.
func resolveCommand(name, pathEnv string, mounts []mount) string {
	if name == "" || strings.Contains(name, "/") {
		return name
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := path.Join(dir, name)
		if st, err := os.Stat(hostPathOf(p, mounts)); err == nil && !st.IsDir() && st.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return name
}

// hostPathOf is the host path a sandbox path p shows: under the last mount
// with the longest target covering it, else p itself.
func hostPathOf(p string, mounts []mount) string {
	best, bestTarget := -1, ""
	for i, m := range mounts {
		t := path.Clean("/" + m.Target)
		if isUnder(p, t) && (best < 0 || len(t) >= len(bestTarget)) {
			best, bestTarget = i, t
		}
	}
	if best < 0 {
		return p
	}
	return filepath.Join(mounts[best].Source, strings.TrimPrefix(p, bestTarget))
}

// underAny reports whether p is one of dirs or inside one.
func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if isUnder(p, d) {
			return true
		}
	}
	return false
}

func isUnder(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

func strictlyUnder(dir string, paths []string) []string {
	var out []string
	for _, p := range paths {
		if p != dir && isUnder(p, dir) {
			out = append(out, p)
		}
	}
	return out
}

// rel turns an absolute path into an io/fs name relative to "/".
func rel(p string) string {
	r := strings.TrimPrefix(path.Clean(p), "/")
	if r == "" {
		return "."
	}
	return r
}
