package controller

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// CPU tuning. Paddle sizes its CPU thread pools from OMP_NUM_THREADS and
// forces it to 1 when it is unset (paddle/base/__init__.py, __bootstrap__), so
// a pod that may use four CPUs trains on one. A container that says how many
// CPUs it may use (its limit, else its request) gets that many threads,
// rounded up, in OMP_NUM_THREADS and MKL_NUM_THREADS (MKL's own pool, which
// follows OMP's when unset but not in every build). A container that sets
// either variable, or takes variables from envFrom (where the operator
// cannot see them, and its env would win over them), keeps what it has.
//
// Paddle's launcher writes its logs under ./log and fails when the working
// directory cannot be written. A container with a read-only root file
// system gets PADDLE_LOG_DIR on an emptyDir of its pod instead.

// threadEnvNames are the variables that size a Paddle process's CPU threads.
var threadEnvNames = []string{"OMP_NUM_THREADS", "MKL_NUM_THREADS"}

const (
	envLogDir = "PADDLE_LOG_DIR"
	// logVolume is the emptyDir that holds the launcher's logs of
	// containers whose root file system is read-only.
	logVolume    = "paddle-log"
	logMountPath = "/var/log/paddle"
)

// cpuThreads is how many threads a container's CPUs allow: its CPU limit,
// else its request, rounded up; false when it names neither.
func cpuThreads(c *corev1.Container) (int64, bool) {
	q, ok := c.Resources.Limits[corev1.ResourceCPU]
	if !ok || q.IsZero() {
		q, ok = c.Resources.Requests[corev1.ResourceCPU]
	}
	if !ok || q.IsZero() {
		return 0, false
	}
	return (q.MilliValue() + 999) / 1000, true
}

// tuneCPU sets a container's thread variables from its CPUs (see above).
func tuneCPU(c *corev1.Container) {
	if len(c.EnvFrom) > 0 || hasEnv(c.Env, threadEnvNames...) {
		return
	}
	n, ok := cpuThreads(c)
	if !ok {
		return
	}
	v := strconv.FormatInt(n, 10)
	for _, name := range threadEnvNames {
		c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: v})
	}
}

// giveLogDir points the launcher's logs of a container with a read-only root
// file system at the pod's log volume, and reports whether it did.
func giveLogDir(c *corev1.Container) bool {
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || len(c.EnvFrom) > 0 || hasEnv(c.Env, envLogDir) {
		return false
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == logMountPath {
			return false
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: envLogDir, Value: logMountPath})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: logVolume, MountPath: logMountPath})
	return true
}

// tunePod tunes every container of a Paddle pod's template (init containers
// too: they may run Paddle) and adds the log volume where one needs it.
func tunePod(spec *corev1.PodSpec) {
	needsLogs := false
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			tuneCPU(&cs[i])
			if giveLogDir(&cs[i]) {
				needsLogs = true
			}
		}
	}
	if needsLogs && !hasVolume(spec.Volumes, logVolume) {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: logVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
}

// hasEnv reports whether env sets any of names.
func hasEnv(env []corev1.EnvVar, names ...string) bool {
	for _, e := range env {
		for _, n := range names {
			if e.Name == n {
				return true
			}
		}
	}
	return false
}
