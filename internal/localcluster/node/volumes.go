package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"golang.org/x/sys/unix"
)

// podVolume is a pod volume as it exists on the host.
type podVolume struct {
	Name     string
	HostPath string
	// ReadOnly volumes are mounted read-only whatever the mount says.
	ReadOnly bool
	// Projection volumes hold files the node writes; their subPaths are not
	// created on demand.
	Projection bool
	// Host volumes are host paths the pod's spec (or its PersistentVolume)
	// names: hostPathRules decide whether they may be mounted and written.
	Host bool
}

// volumeMountPlan is one volumeMount of a container, resolved to its volume.
type volumeMountPlan struct {
	Volume   podVolume
	SubPath  string
	Target   string
	ReadOnly bool
}

// planMounts resolves a container's volumeMounts against the pod's volumes;
// env expands subPathExpr.
func planMounts(c *corev1.Container, vols map[string]podVolume, env func(string) (string, bool)) ([]volumeMountPlan, error) {
	var plans []volumeMountPlan
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, configErrorf("volumeMount %q: the pod has no volume %q", vm.MountPath, vm.Name)
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = expandVars(vm.SubPathExpr, env)
		}
		if err := validateSubPath(sub); err != nil {
			return nil, configErrorf("volumeMount %q: %w", vm.MountPath, err)
		}
		plans = append(plans, volumeMountPlan{
			Volume:   v,
			SubPath:  sub,
			Target:   path.Clean("/" + vm.MountPath),
			ReadOnly: vm.ReadOnly || v.ReadOnly,
		})
	}
	return plans, nil
}

func validateSubPath(sub string) error {
	if sub == "" {
		return nil
	}
	if path.IsAbs(sub) {
		return fmt.Errorf("subPath %q must be relative", sub)
	}
	for _, part := range strings.Split(sub, "/") {
		if part == ".." {
			return fmt.Errorf("subPath %q must not contain '..'", sub)
		}
	}
	return nil
}

// open opens the mount's source and checks it through its descriptor, so
// that what is checked is what is bound. A host volume is resolved as the
// kubelet does (its own symlinks followed), then refused when it is or holds
// the cluster's state, and made read-only outside the writable host paths. A
// subPath is resolved beneath the volume, through links that stay inside it
// only; one of a writable volume is created when missing, as the kubelet
// does, each directory beneath the one before. The file is the caller's to
// close.
func (p volumeMountPlan) open(rules hostPathRules) (mount, error) {
	m := mount{Target: p.Target, ReadOnly: p.ReadOnly}
	root, err := openPath(p.Volume.HostPath)
	if err != nil {
		return m, fmt.Errorf("volume %q: %w", p.Volume.Name, err)
	}
	if p.Volume.Host {
		real, err := realPath(root)
		var fi os.FileInfo
		if err == nil {
			fi, err = root.Stat()
		}
		if err == nil {
			err = rules.checkVolume(real, fi)
		}
		if err != nil {
			root.Close()
			return m, configErrorf("hostPath volume %q (%s): %w", p.Volume.Name, p.Volume.HostPath, err)
		}
		if !rules.writable(real) {
			m.ReadOnly = true
		}
		m.IDMap = !m.ReadOnly
	}
	m.Source = p.Volume.HostPath
	if p.SubPath == "" {
		m.File = root
		return m, nil
	}
	defer root.Close()
	f, err := openBeneath(root, p.SubPath, linksInside)
	if errors.Is(err, unix.ENOENT) && !p.Volume.Projection && !m.ReadOnly {
		// As an emptyDir: writable by pods of every uid (a root node's run
		// as unprivileged host users, sandbox_hostids.go).
		if err := mkdirBeneath(root, p.SubPath, 0o777); err != nil {
			return m, fmt.Errorf("creating subPath %q of volume %q: %w", p.SubPath, p.Volume.Name, err)
		}
		f, err = openBeneath(root, p.SubPath, linksInside)
	}
	switch {
	case errors.Is(err, errOutsideRoot):
		return m, configErrorf("subPath %q of volume %q leads outside the volume", p.SubPath, p.Volume.Name)
	case err != nil:
		return m, configErrorf("subPath %q of volume %q: %w", p.SubPath, p.Volume.Name, err)
	}
	m.Source, m.File = filepath.Join(p.Volume.HostPath, p.SubPath), f
	return m, nil
}

// setUpHostVolume prepares a volume whose content the node does not write:
// emptyDir, hostPath or persistentVolumeClaim. podDir holds emptyDirs. A
// host path the rules refuse is refused before anything is created there.
func setUpHostVolume(ctx context.Context, client kubernetes.Interface, rules hostPathRules, ns, podDir string, v *corev1.Volume) (podVolume, error) {
	switch {
	case v.EmptyDir != nil:
		dir := filepath.Join(podDir, "volumes", v.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return podVolume{}, err
		}
		// World-writable like the kubelet's, for processes of any user.
		if err := os.Chmod(dir, 0o777); err != nil {
			return podVolume{}, err
		}
		return podVolume{Name: v.Name, HostPath: dir}, nil
	case v.HostPath != nil:
		p := v.HostPath.Path
		if err := rules.checkPath(p); err != nil {
			return podVolume{}, fmt.Errorf("hostPath volume %q (%s): %w", v.Name, p, err)
		}
		if err := prepareHostPath(rules, p, v.HostPath.Type); err != nil {
			return podVolume{}, fmt.Errorf("hostPath volume %q: %w", v.Name, err)
		}
		return podVolume{Name: v.Name, HostPath: p, Host: true, ReadOnly: !rules.writablePath(p)}, nil
	case v.PersistentVolumeClaim != nil:
		p, err := claimHostPath(ctx, client, rules, ns, v.PersistentVolumeClaim.ClaimName)
		if err != nil {
			return podVolume{}, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		return podVolume{Name: v.Name, HostPath: p, Host: true, ReadOnly: v.PersistentVolumeClaim.ReadOnly || !rules.writablePath(p)}, nil
	}
	return podVolume{}, fmt.Errorf("volume %q: only emptyDir, hostPath, persistentVolumeClaim (hostPath or local PVs), configMap, secret, downwardAPI and projected volumes are supported by the paddlejob node", v.Name)
}

// prepareHostPath checks a hostPath against its type, creating it for the
// OrCreate types: only in a writable directory, and without following a
// symlink (createBeneath), so that a link a pod left in its writable volume
// cannot make the node create a file where the link points. What it
// creates is writable by pods of every uid (0777 and 0666, as an emptyDir),
// since a root node's pods run as unprivileged host users
// (sandbox_hostids.go).
func prepareHostPath(rules hostPathRules, p string, t *corev1.HostPathType) error {
	kind := corev1.HostPathUnset
	if t != nil {
		kind = *t
	}
	st, err := os.Stat(p)
	exists := err == nil
	switch kind {
	case corev1.HostPathDirectoryOrCreate:
		if !exists {
			return createHostPath(rules, p, true)
		}
		if !st.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", p)
		}
		return nil
	case corev1.HostPathFileOrCreate:
		if !exists {
			return createHostPath(rules, p, false)
		}
		if st.IsDir() {
			return fmt.Errorf("%s exists and is a directory", p)
		}
		return nil
	}
	if !exists {
		return fmt.Errorf("%s does not exist", p)
	}
	switch kind {
	case corev1.HostPathDirectory:
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory", p)
		}
	case corev1.HostPathFile:
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s is not a file", p)
		}
	case corev1.HostPathSocket:
		if st.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("%s is not a socket", p)
		}
	case corev1.HostPathCharDev:
		if st.Mode()&os.ModeCharDevice == 0 {
			return fmt.Errorf("%s is not a character device", p)
		}
	case corev1.HostPathBlockDev:
		if st.Mode()&os.ModeDevice == 0 || st.Mode()&os.ModeCharDevice != 0 {
			return fmt.Errorf("%s is not a block device", p)
		}
	}
	return nil
}

// claimHostPath resolves a PersistentVolumeClaim to the host directory of the
// PersistentVolume bound to it; only hostPath and local volumes are on this
// machine.
func claimHostPath(ctx context.Context, client kubernetes.Interface, rules hostPathRules, ns, claim string) (string, error) {
	pvc, err := client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %s/%s: %w", ns, claim, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("persistentvolumeclaim %s/%s is not bound yet", ns, claim)
	}
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("persistentvolume %s of claim %s/%s: %w", pvc.Spec.VolumeName, ns, claim, err)
	}
	switch {
	case pv.Spec.HostPath != nil:
		if err := rules.checkPath(pv.Spec.HostPath.Path); err != nil {
			return "", fmt.Errorf("persistentvolume %s (%s): %w", pv.Name, pv.Spec.HostPath.Path, err)
		}
		if err := prepareHostPath(rules, pv.Spec.HostPath.Path, pv.Spec.HostPath.Type); err != nil {
			return "", fmt.Errorf("persistentvolume %s: %w", pv.Name, err)
		}
		return pv.Spec.HostPath.Path, nil
	case pv.Spec.Local != nil:
		if err := rules.checkPath(pv.Spec.Local.Path); err != nil {
			return "", fmt.Errorf("persistentvolume %s (%s): %w", pv.Name, pv.Spec.Local.Path, err)
		}
		if err := prepareHostPath(rules, pv.Spec.Local.Path, nil); err != nil {
			return "", fmt.Errorf("persistentvolume %s: %w", pv.Name, err)
		}
		return pv.Spec.Local.Path, nil
	}
	return "", fmt.Errorf("persistentvolume %s (bound to claim %s/%s) is neither hostPath nor local, which is all the paddlejob node can mount", pv.Name, ns, claim)
}

// createHostPath creates p, a directory or an empty file, and the
// directories above it, beneath the writable directory it lies in, one
// level at a time through descriptors that follow no symlink.
func createHostPath(rules hostPathRules, p string, dir bool) error {
	real := resolveExisting(p)
	top := rules.writableRoot(real)
	if top == "" {
		return fmt.Errorf("%s does not exist, and the node creates hostPaths only in the directories pods may write (paddlejob up --host-path-rw)", p)
	}
	root, err := openRoot(top)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s cannot be created: %s, the directory pods may write it in (paddlejob up --host-path-rw), does not exist", p, top)
	}
	if err != nil {
		return err
	}
	defer root.Close()
	rel, err := filepath.Rel(top, real)
	if err != nil {
		return err
	}
	if err := createBeneath(root, rel, dir); err != nil {
		return fmt.Errorf("creating %s: %w", p, err)
	}
	return nil
}

// createBeneath makes name beneath root, a directory or (dir false) an
// empty file, and the directories above it; no component may be a symlink,
// the last one included (O_NOFOLLOW: a dangling link is not followed to
// create its target).
func createBeneath(root *os.File, name string, dir bool) error {
	name = cleanBeneath(name)
	if name == "." {
		return nil
	}
	parts := strings.Split(name, "/")
	parent, err := openBeneath(root, ".", noLinks)
	if err != nil {
		return err
	}
	defer func() { parent.Close() }()
	for i, part := range parts {
		last := i == len(parts)-1
		if last && !dir {
			fd, err := unix.Openat(int(parent.Fd()), part, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o666)
			if errors.Is(err, unix.EEXIST) {
				// O_EXCL fails so on a link too: a file made meanwhile
				// is kept as it is, a link refused.
				fd, err = unix.Openat(int(parent.Fd()), part, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err == nil {
					var st unix.Stat_t
					err = unix.Fstat(fd, &st)
					unix.Close(fd)
					if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
						err = errIsLink
					}
				}
				if err != nil {
					return &os.PathError{Op: "create", Path: path.Join(parts[:i+1]...), Err: err}
				}
				return nil
			}
			if errors.Is(err, unix.ELOOP) {
				err = errIsLink
			}
			if err != nil {
				return &os.PathError{Op: "create", Path: path.Join(parts[:i+1]...), Err: err}
			}
			// The umask would keep other uids out.
			return errors.Join(unix.Fchmod(fd, 0o666), unix.Close(fd))
		}
		err := unix.Mkdirat(int(parent.Fd()), part, 0o777)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return &os.PathError{Op: "mkdir", Path: path.Join(parts[:i+1]...), Err: err}
		}
		made := err == nil
		next, err := openBeneath(parent, part, noLinks)
		if err != nil {
			return err
		}
		if made {
			// next is an O_PATH descriptor, which fchmod refuses: its
			// magic link names the directory itself, never a link.
			if err := os.Chmod(fmt.Sprintf("/proc/self/fd/%d", next.Fd()), 0o777); err != nil {
				next.Close()
				return err
			}
		}
		parent.Close()
		parent = next
	}
	return nil
}
