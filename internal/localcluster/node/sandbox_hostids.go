package node

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/paddlejob/paddlejob/internal/fsutil"
)

// Who a root node's pods are on the host. bwrap maps the sandbox's uid to
// its caller's, so a sandbox bwrap started as root was the host's root: a
// pod that could write a root-owned file (a sysctl, a hostPath) did so as
// root. A root node therefore gives its pods a range of unprivileged host
// ids of their own, as rootless engines (/etc/subuid) and Kubernetes' user
// namespaces do: a pod whose uid is u runs, seen from the host, as base+u
// (its gid g as base+g), runAsUser 0 included, and bwrap is started as that
// user, holding no privilege of the host's. A normal user's node keeps its
// pods as its user: it has no other ids to give.

// hostIDRangeSize is how many ids a node's range holds: the uids and gids
// a pod may name, 0-65535, as in Kubernetes' user namespaces.
const hostIDRangeSize = 1 << 16

// Ranges are picked at hostIDsFirst + n*hostIDRangeSize, n below
// hostIDsSlots: above the accounts of a system and the ranges useradd gives
// in /etc/subuid (100000 up) and systemd-nspawn's (up to 0x6FFFFFFF), below
// the ids systemd reserves from 0x7FFE0000 and 2^31, which some programs
// read as negative.
const (
	hostIDsFirst = 0x70000000
	hostIDsSlots = (0x7FFE0000 - hostIDsFirst) / hostIDRangeSize
)

// hostIDsFile records a node's range in its state directory, so that a
// restart keeps it (the files its pods wrote keep their owners).
const hostIDsFile = "sandbox-host-ids"

// PodHostIDsAnnotation on a root node's Node names the host uids and gids
// its pods run as (`kubectl describe node` shows it).
const PodHostIDsAnnotation = "node.paddlejob.io/pod-host-ids"

// hostIDRange is a node's range of host ids: [Base, Base+hostIDRangeSize).
type hostIDRange struct {
	Base uint32
}

// String is the range as `kubectl describe node` and the docs show it.
func (r hostIDRange) String() string {
	return fmt.Sprintf("%d-%d", r.Base, r.Base+hostIDRangeSize-1)
}

// pickHostIDBase is the base of the range a node with that state directory
// takes first: one slot of the hash of the directory, so that the nodes of
// one machine (each with a state directory of its own) mostly differ.
func pickHostIDBase(stateDir string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(filepath.Clean(stateDir)))
	return hostIDsFirst + (h.Sum32()%hostIDsSlots)*hostIDRangeSize
}

// parseHostIDRange reads a recorded range, refusing one outside the
// ranges a node picks (a hand-edited file that named host ids of accounts).
func parseHostIDRange(text string) (hostIDRange, error) {
	base, err := strconv.ParseUint(strings.TrimSpace(text), 10, 32)
	if err != nil {
		return hostIDRange{}, fmt.Errorf("%s holds %q, not a number: %w", hostIDsFile, strings.TrimSpace(text), err)
	}
	b := uint32(base)
	if b < hostIDsFirst || b%hostIDRangeSize != 0 || (b-hostIDsFirst)/hostIDRangeSize >= hostIDsSlots {
		return hostIDRange{}, fmt.Errorf("%s holds %d: a range's base is a multiple of %d from %d to %d", hostIDsFile, b, hostIDRangeSize,
			hostIDsFirst, hostIDsFirst+(hostIDsSlots-1)*hostIDRangeSize)
	}
	return hostIDRange{Base: b}, nil
}

// loadHostIDRange returns the node's range, recorded in its state
// directory, picking and recording one on the first start.
func loadHostIDRange(stateDir string) (hostIDRange, error) {
	file := filepath.Join(stateDir, hostIDsFile)
	data, err := os.ReadFile(file)
	if err == nil {
		r, err := parseHostIDRange(string(data))
		if err != nil {
			return hostIDRange{}, fmt.Errorf("%s: %w", file, err)
		}
		return r, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return hostIDRange{}, err
	}
	r := hostIDRange{Base: pickHostIDBase(stateDir)}
	if err := fsutil.WriteFileAtomic(file, []byte(strconv.FormatUint(uint64(r.Base), 10)+"\n"), 0o644); err != nil {
		return hostIDRange{}, err
	}
	return r, nil
}

// credential is who bwrap runs as for a sandbox of that identity: base+uid
// and base+gid, no supplementary group. A root node's sandboxUser always
// names both.
func (r hostIDRange) credential(id sandboxIdentity, container string) (*syscall.Credential, error) {
	if id.UID == nil || id.GID == nil {
		return nil, fmt.Errorf("container %q: no uid or gid to run as", container)
	}
	for _, f := range []struct {
		field string
		v     int64
	}{{"runAsUser", *id.UID}, {"runAsGroup", *id.GID}} {
		if f.v < 0 || f.v >= hostIDRangeSize {
			return nil, configErrorf("container %q: securityContext.%s %d is outside 0-%d, the ids this node maps", container, f.field, f.v, hostIDRangeSize-1)
		}
	}
	return &syscall.Credential{Uid: r.Base + uint32(*id.UID), Gid: r.Base + uint32(*id.GID), Groups: []uint32{}}, nil
}

// sandboxHostIDs are a root node's range and the staging of its sandboxes'
// mounts.
type sandboxHostIDs struct {
	Range  hostIDRange
	stager *stager
}

// newSandboxHostIDs loads the node's range and mounts its staging tmpfs.
func newSandboxHostIDs(stateDir string) (*sandboxHostIDs, error) {
	r, err := loadHostIDRange(stateDir)
	if err != nil {
		return nil, fmt.Errorf("the pods' host ids: %w", err)
	}
	s, err := newStager(stateDir, r)
	if err != nil {
		return nil, err
	}
	return &sandboxHostIDs{Range: r, stager: s}, nil
}

// hostRun is how one run of a container starts on a root node: bwrap as
// its host user, from staged mounts.
type hostRun struct {
	credential *syscall.Credential
	staged     *stagedRun
}

// asHostIDs prepares a run of c as the node's range, on a root node (none
// elsewhere): the host user of the run's identity owns the container's own
// writable directories (its copy of the image and its HOME, as a
// container's writable layer is its user's), and the sandbox's mounts are
// staged for that user to bind.
func (r *podRuntime) asHostIDs(c *containerRun, sb *sandboxSpec, user sandboxIdentity) (hostRun, error) {
	ids := r.deps.sandbox.hostIDs
	if ids == nil {
		return hostRun{}, nil
	}
	cred, err := ids.Range.credential(user, c.spec.Name)
	if err != nil {
		return hostRun{}, err
	}
	rootfs := r.imageRoot(c.spec.Name)
	if err := chownTree(rootfs, cred); err != nil {
		return hostRun{}, &waitError{reason: reasonCreateError, err: fmt.Errorf("giving the image's copy to the container's user: %w", err)}
	}
	if err := os.Lchown(filepath.Join(filepath.Dir(rootfs), "home"), int(cred.Uid), int(cred.Gid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return hostRun{}, &waitError{reason: reasonCreateError, err: err}
	}
	staged, err := ids.stager.stage(fmt.Sprintf("%s-%s-%d", r.uid, c.spec.Name, c.runs), sb)
	if err != nil {
		return hostRun{}, &waitError{reason: reasonCreateError, err: err}
	}
	return hostRun{credential: cred, staged: staged}, nil
}

// chownTree gives dir and everything in it to cred's user and group, links
// themselves (never their targets); a missing dir is left alone.
func chownTree(dir string, cred *syscall.Credential) error {
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid))
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// releaseRun removes the cgroup and closes the log of a run that will not
// start.
func releaseRun(cgroup *containerCgroup, log *containerLog) {
	if cgroup != nil {
		cgroup.remove()
	}
	_ = log.close()
}

// giveToPodRoot gives dir's tree, written by the node, to the pod's root
// (base+0) on a root node: the kubelet's files are root's, so a pod running
// as root reads a 0600 ConfigMap or Secret item and others read what its
// mode lets them, as on Kubernetes.
func (r *podRuntime) giveToPodRoot(dir string) error {
	ids := r.deps.sandbox.hostIDs
	if ids == nil {
		return nil
	}
	return chownTree(dir, &syscall.Credential{Uid: ids.Range.Base, Gid: ids.Range.Base})
}
