package node

// Local storage eviction, as the kubelet's eviction manager does it: every
// evictionInterval the node measures what each pod with a limit on it uses
// of the disk — its emptyDir volumes, and each container's files (its copy
// of its image, its HOME, its logs) — and evicts a pod past a limit: its
// containers are killed at once, and it ends Failed with reason Evicted and
// the kubelet's message. The limits are an emptyDir's sizeLimit, a
// container's limits.ephemeral-storage, and their sum over the pod's
// containers for the pod's whole local storage, checked in the kubelet's
// order. Between two measures a pod may write past its limit, as under a
// kubelet; a memory-backed emptyDir of a root node is a tmpfs of its size
// and cannot (memoryvolume.go).

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// evictionInterval is how often pods' storage is measured: the kubelet's
// eviction manager's monitoring interval.
const evictionInterval = 10 * time.Second

// reasonEvicted is the reason of an evicted pod, and of its event.
const reasonEvicted = "Evicted"

// storageUsage is what a pod uses of the node's disk, in bytes.
type storageUsage struct {
	// volumes are its emptyDirs', by volume name.
	volumes map[string]int64
	// containers are each container's files and logs, by name.
	containers map[string]int64
}

// hasStorageLimits reports whether a pod has a limit on its local storage:
// then the node measures it.
func hasStorageLimits(spec *corev1.PodSpec) bool {
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
			return true
		}
	}
	_, ok := podStorageLimit(spec)
	return ok
}

// podStorageLimit is the sum of the containers' ephemeral-storage limits,
// as the kubelet's pod limit is; ok is false when none sets one.
func podStorageLimit(spec *corev1.PodSpec) (resource.Quantity, bool) {
	var sum resource.Quantity
	ok := false
	for _, c := range spec.Containers {
		if q, set := c.Resources.Limits[corev1.ResourceEphemeralStorage]; set {
			sum.Add(q)
			ok = true
		}
	}
	return sum, ok && !sum.IsZero()
}

// evictionMessage says why a pod using u is evicted, in the kubelet's words
// (pkg/kubelet/eviction/helpers.go), or "" when it stays. As the kubelet,
// it checks the emptyDirs' limits, then the pod's, then each container's.
func evictionMessage(spec *corev1.PodSpec, u storageUsage) string {
	for _, v := range spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.IsZero() {
			continue
		}
		if used, ok := u.volumes[v.Name]; ok && used > v.EmptyDir.SizeLimit.Value() {
			return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", v.Name, v.EmptyDir.SizeLimit.String())
		}
	}
	if limit, ok := podStorageLimit(spec); ok {
		var used int64
		for _, v := range spec.Volumes {
			// Memory-backed volumes count as memory, not disk.
			if v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumMemory {
				used += u.volumes[v.Name]
			}
		}
		for _, n := range u.containers {
			used += n
		}
		if used > limit.Value() {
			return fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s. ", limit.String())
		}
	}
	for _, c := range spec.Containers {
		q, set := c.Resources.Limits[corev1.ResourceEphemeralStorage]
		if set && !q.IsZero() && u.containers[c.Name] > q.Value() {
			return fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", c.Name, q.String())
		}
	}
	return ""
}

// diskUsage is what the files under dir take on disk, as du counts it:
// allocated blocks, each file once however many links it has, no link
// followed, nothing of another file system (a mount under dir).
func diskUsage(dir string) int64 {
	root, err := os.Lstat(dir)
	if err != nil {
		return 0
	}
	dev := root.Sys().(*syscall.Stat_t).Dev
	seen := map[uint64]bool{}
	var total int64
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: not counted
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if st.Dev != dev {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if st.Nlink > 1 && !d.IsDir() {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		total += st.Blocks * 512
		return nil
	})
	return total
}

// storageUsage measures the pod's emptyDirs and, when it has a limit on
// them, its containers' files.
func (r *podRuntime) storageUsage(spec *corev1.PodSpec) storageUsage {
	u := storageUsage{volumes: map[string]int64{}, containers: map[string]int64{}}
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil {
			u.volumes[v.Name] = diskUsage(filepath.Join(r.dir, "volumes", v.Name))
		}
	}
	if _, ok := podStorageLimit(spec); ok {
		for _, c := range spec.Containers {
			u.containers[c.Name] = diskUsage(filepath.Dir(r.imageRoot(c.Name))) + diskUsage(filepath.Join(r.dir, "logs", c.Name))
		}
	}
	return u
}

// evict stops the pod at once for message, and reports it Failed with
// reason Evicted once its containers are gone. A second eviction keeps the
// first message.
func (r *podRuntime) evict(message string) {
	r.mu.Lock()
	first := r.evicted == "" && !r.finished
	if first {
		r.evicted = message
	}
	r.mu.Unlock()
	if !first {
		return
	}
	r.deps.log.Info("Evicting a pod", "pod", r.key, "reason", message)
	r.event(corev1.EventTypeWarning, reasonEvicted, message)
	r.stop(0, false)
}

// checkStorage measures a running pod with storage limits and evicts it
// when it is past one.
func (r *podRuntime) checkStorage() {
	r.mu.Lock()
	skip := r.finished || r.stopping || r.evicted != ""
	r.mu.Unlock()
	if skip {
		return
	}
	pod := r.podCopy()
	if !hasStorageLimits(&pod.Spec) {
		return
	}
	if msg := evictionMessage(&pod.Spec, r.storageUsage(&pod.Spec)); msg != "" {
		r.evict(msg)
	}
}

// enforceStorageLimits measures the pods every evictionInterval until ctx
// ends.
func (p *Provider) enforceStorageLimits(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.deps.clock.After(evictionInterval):
		}
		for _, r := range p.allRuntimes() {
			r.checkStorage()
		}
	}
}
