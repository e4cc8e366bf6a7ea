package node

// Process assembly: how a container's run becomes a sandboxed process, from
// its command, environment and mounts.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// buildProcess works out how to start the container's next run: command,
// environment, mounts and sandbox. Errors keep the container waiting.
//
// Every bind source is opened and checked first (beneath.go); the files are
// the process's (processSpec.Opened), closed here on error.
func (r *podRuntime) buildProcess(c *containerRun) (spec processSpec, err error) {
	var opened []*os.File
	defer func() {
		if err != nil {
			closeFiles(opened)
		}
	}()
	keep := func(ms ...mount) {
		for _, m := range ms {
			if m.File != nil {
				opened = append(opened, m.File)
			}
		}
	}

	bwrap, err := r.deps.bwrapPath()
	if err != nil {
		return processSpec{}, &waitError{reason: reasonCreateError, err: err}
	}
	pod := r.podCopy()
	r.mu.Lock()
	vols := r.volumes
	r.mu.Unlock()

	entry, known, env, err := r.imageOf(pod, c)
	if err != nil {
		return processSpec{}, err
	}
	argv, err := containerCommand(c.spec, entry, known, env)
	if err != nil {
		return processSpec{}, err
	}

	wd := c.spec.WorkingDir
	if wd == "" {
		wd = entry.WorkingDir
	}
	mounts, err := r.containerMounts(c, entry, env, wd, vols, keep)
	if err != nil {
		return processSpec{}, err
	}
	if mounts, err = r.bindCommand(argv, env, mounts, keep); err != nil {
		return processSpec{}, err
	}

	user, err := sandboxUser(pod, c.spec, r.deps.sandbox.asRoot)
	if err != nil {
		return processSpec{}, err
	}
	seccomp, err := seccompFile()
	if err != nil {
		return processSpec{}, &waitError{reason: reasonCreateError, err: err}
	}
	keep(mount{File: seccomp})
	cgroup, log, err := r.runCgroupAndLog(c)
	if err != nil {
		return processSpec{}, err
	}

	sandbox := r.sandboxOf(bwrap, argv, wd, mounts, user, seccomp)
	run, err := r.asHostIDs(c, &sandbox, user)
	if err != nil {
		releaseRun(cgroup, log)
		return processSpec{}, err
	}
	args := bwrapArgs(r.deps.hostFS, sandbox)
	return processSpec{Bwrap: bwrap, Args: args, Env: env.strings(), Log: log, Cgroup: cgroup, Files: sandboxFiles(sandbox), Opened: opened,
		Netns: r.netns, Credential: run.credential, Staged: run.staged}, nil
}

// imageOf is the entry of the container's image and the container's
// environment. A Paddle image whose runtime is not installed yet has it
// installed first (paddlepull.go), as a kubelet pulls an image; one that
// cannot run on its release is refused (checkPaddle).
func (r *podRuntime) imageOf(pod *corev1.Pod, c *containerRun) (entry ImageEntry, known bool, env *envList, err error) {
	images := r.deps.images.current()
	entry, known = images.Lookup(c.spec.Image)
	if !known && len(c.spec.Command) == 0 {
		return entry, known, nil, &waitError{reason: reasonErrImagePull, err: errors.New(images.unknownImageMessage(c.spec.Image))}
	}
	if env, err = r.environment(pod, c.spec, entry); err != nil {
		return entry, known, nil, err
	}
	if err := r.checkPaddle(c, entry, env); err != nil {
		return entry, known, nil, err
	}
	release := images.pendingPaddle(entry)
	if release == "" {
		return entry, known, env, nil
	}
	if err := r.pullPaddle(c, release); err != nil {
		return entry, known, nil, err
	}
	// The entry now names the installed runtime's paths.
	entry, _ = r.deps.images.current().Lookup(c.spec.Image)
	env, err = r.environment(pod, c.spec, entry)
	return entry, known, env, err
}

// sandboxOf is the sandbox one run of the pod's container starts in: the
// pod's hostname and hosts files, the node's hidden paths and size limits.
func (r *podRuntime) sandboxOf(bwrap string, argv []string, wd string, mounts []mount, user sandboxIdentity, seccomp *os.File) sandboxSpec {
	return sandboxSpec{
		Hostname:       r.hostname,
		HostsFile:      r.hostsPath(),
		HostnameFile:   r.hostnamePath(),
		ResolvConfFile: r.resolvConfPath(),
		Mounts:         mounts,
		WorkingDir:     wd,
		Argv:           argv,
		Hidden:         r.deps.hidden,
		// Root keeps its capabilities in a sandbox: it could remount the
		// read-only binds writable.
		DropCapabilities: true,
		BindFD:           bwrapBindsFD(bwrap),
		TmpSize:          r.deps.sandbox.tmpSize,
		ShmSize:          r.deps.sandbox.shmSize,
		User:             user,
		Seccomp:          seccomp,
	}
}

// containerCommand is the container's command line with $(VAR) references
// expanded from its environment; a command that cannot be worked out keeps
// the container waiting as CreateContainerError.
func containerCommand(spec *corev1.Container, entry ImageEntry, known bool, env *envList) ([]string, error) {
	argv, err := containerArgv(spec, entry, known)
	if err != nil {
		return nil, &waitError{reason: reasonCreateError, err: err}
	}
	for i := range argv {
		argv[i] = expandVars(argv[i], env.lookup)
	}
	return argv, nil
}

// bindCommand resolves argv[0] on the container's PATH (the image's, unless
// the container sets its own) as the sandbox will see it. An absolute
// command outside the sandbox's roots and mounts gets its file alone bound,
// never its directory, so the sandbox sees no more of the host than it runs.
// keep records the file opened, for the caller to close.
func (r *podRuntime) bindCommand(argv []string, env *envList, mounts []mount, keep func(...mount)) ([]mount, error) {
	path, _ := env.lookup("PATH")
	argv[0] = resolveCommand(argv[0], path, mounts)
	if !needsCommandBind(argv[0], mounts) {
		return mounts, nil
	}
	// A missing one is bound to nothing: the start fails, a StartError
	// naming it, as with a container runtime.
	m, err := r.deps.hostPaths.openCommand(argv[0])
	if errors.Is(err, fs.ErrNotExist) {
		return mounts, nil
	}
	if err != nil {
		return nil, err
	}
	keep(m)
	return append(mounts, m), nil
}

// runCgroupAndLog makes the run's cgroup and log file. Every run has a
// group of its own: the container's limits, the node's defaults for the
// rest (limits.go). The cgroup is removed again if the log cannot be made,
// so a waiting container leaves no group behind.
func (r *podRuntime) runCgroupAndLog(c *containerRun) (*containerCgroup, *containerLog, error) {
	limits := r.deps.sandbox.limits.limitsOf(c.spec)
	var capped bool
	if limits.memoryBytes, capped = r.deps.sandbox.node.capMemory(limits.memoryBytes); capped {
		r.event(corev1.EventTypeWarning, reasonMemoryLimitCapped, memoryCappedMessage(c.spec, limits.memoryBytes))
	}
	cgroup, err := r.deps.cgroups.create(fmt.Sprintf("%s-%s-%d", r.uid, c.spec.Name, c.runs), limits, hasLimits(c.spec))
	if err != nil {
		return nil, nil, &waitError{reason: reasonCreateError, err: err}
	}
	log, err := r.newRunLog(c)
	if err != nil {
		if cgroup != nil {
			cgroup.remove()
		}
		return nil, nil, err
	}
	return cgroup, log, nil
}

// containerMounts are a container's mounts: the image's files, its
// volumes over them, and a HOME of its own unless one of those is there.
// keep records each file opened, for the caller to close.
func (r *podRuntime) containerMounts(c *containerRun, entry ImageEntry, env *envList, wd string, vols map[string]podVolume, keep func(...mount)) ([]mount, error) {
	plans, err := planMounts(c.spec, vols, env.lookup)
	if err != nil {
		return nil, err
	}
	var volumeMounts []mount
	var volumeTargets []string
	for _, pl := range plans {
		m, err := pl.open(r.deps.hostPaths)
		keep(m)
		if err != nil {
			return nil, err
		}
		volumeMounts = append(volumeMounts, m)
		volumeTargets = append(volumeTargets, pl.Target)
	}
	// The image's files first: volumes are mounted over them.
	mounts, err := prepareImageMounts(r.deps.hostFS, r.imageRoot(c.spec.Name), entry, wd, volumeTargets)
	keep(mounts...)
	var ce *configError
	if errors.As(err, &ce) {
		return nil, err
	}
	if err != nil {
		return nil, &waitError{reason: reasonCreateError, err: fmt.Errorf("image %q: %w", c.spec.Image, err)}
	}
	mounts = append(mounts, volumeMounts...)
	// HOME is the container's own, as in an image: a directory of the
	// container's, unless an image file or a volume is mounted there.
	if home, _ := env.lookup("HOME"); home != "" && !slices.ContainsFunc(mounts, func(m mount) bool { return isUnder(home, path.Clean("/"+m.Target)) }) {
		dir := filepath.Join(filepath.Dir(r.imageRoot(c.spec.Name)), "home")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		mounts = append(mounts, mount{Source: dir, Target: home})
	}
	return mounts, nil
}

// newRunLog creates the log of the container's next run, keeping the
// previous run's as the kubelet does.
func (r *podRuntime) newRunLog(c *containerRun) (*containerLog, error) {
	logPath := r.logPath(c.spec.Name, c.runs)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	_ = os.Remove(r.logPath(c.spec.Name, c.runs-2))
	log, err := createContainerLog(logPath, r.deps.clock)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	c.runs++
	c.log = log
	r.mu.Unlock()
	return log, nil
}

// environment is the container's environment: the node's PATH (the host
// stands in for the image), HOME /root, HOSTNAME, the API server's address, the
// image table's env, the emulated GPUs' devices, then the container's
// resolved env.
func (r *podRuntime) environment(pod *corev1.Pod, c *corev1.Container, entry ImageEntry) (*envList, error) {
	resolved, err := containerEnv(pod, c, r.addresses(), r.deps.allocatable, r.deps.objects)
	if err != nil {
		return nil, err
	}
	env := &envList{}
	env.set("PATH", r.deps.defaultPath)
	// As a container running as root has it; the container's own HOME wins.
	env.set("HOME", "/root")
	env.set("HOSTNAME", r.hostname)
	for _, v := range r.deps.apiServerEnv {
		env.set(v.Name, v.Value)
	}
	for _, k := range sortedKeys(entry.Env) {
		env.set(k, entry.Env[k])
	}
	// As a device plugin's, these override the image's and yield to the
	// container's own.
	for _, v := range gpuEnv(c) {
		env.set(v.Name, v.Value)
	}
	for _, v := range resolved.vars {
		env.set(v.Name, v.Value)
	}
	return env, nil
}

func (r *podRuntime) addresses() podAddresses {
	return podAddresses{PodIPs: []string{r.ip}, HostIPs: []string{r.deps.nodeIP}}
}

// imageRoot is where a container's copy of its image's files is made.
func (r *podRuntime) imageRoot(container string) string {
	return filepath.Join(r.dir, "containers", container, "rootfs")
}
