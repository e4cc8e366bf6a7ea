package node

// Memory-backed emptyDir volumes: on a root node, an emptyDir with medium
// Memory is a tmpfs of its own, mounted on the volume's directory, sized
// as the kubelet sizes it: its sizeLimit, else the node's default memory
// limit of a container. Every container of the pod binds the same tmpfs.
// Its pages count against the memory limit of the container that writes
// them. An ordinary user cannot mount: there the volume stays a directory
// of the pod's (docs/local-node.md#isolation).

import (
	"fmt"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// memoryVolumeSize is the size of a memory-backed emptyDir in bytes, 0 for
// the kernel's default (half the memory).
func memoryVolumeSize(v *corev1.EmptyDirVolumeSource, defaultMemory int64) int64 {
	if v.SizeLimit != nil && v.SizeLimit.Value() > 0 {
		return v.SizeLimit.Value()
	}
	return max(defaultMemory, 0)
}

// mountMemoryVolume mounts a tmpfs of size bytes on dir, unless one is
// there already (the pod's volumes are set up again when a container
// restarts).
func mountMemoryVolume(dir string, size int64) error {
	mounted, err := isMountPoint(dir)
	if err != nil || mounted {
		return err
	}
	opts := "mode=0777"
	if size > 0 {
		opts += ",size=" + strconv.FormatInt(size, 10)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting the memory-backed emptyDir %s: %w", dir, err)
	}
	return nil
}

// isMountPoint reports whether dir is on another file system than its
// parent.
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}
