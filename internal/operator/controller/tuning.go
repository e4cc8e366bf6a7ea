package controller

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Tuning: variables the operator sets for Paddle only where the template
// leaves them to it. A container that sets one, or takes variables from
// envFrom (where the operator cannot see them, and its env would win over
// them), keeps what it has. Unlike the environment contract (internal/operator/podcontract), a
// template may set any of them.
//
// Parameter-server training needs Paddle's old static-graph IR: Paddle 3.x
// builds PIR programs by default (FLAGS_enable_pir_api=1), and fleet's
// parameter-server passes fail on them (distributed_optimizer().minimize
// raises "clone(): incompatible function arguments ... pir.Program"). Every
// pod of a parameter-server job gets FLAGS_enable_pir_api=0, so a Paddle
// 2.x program runs unmodified on 3.x; releases before PIR ignore the flag.
//
// Paddle sizes its CPU thread pools from OMP_NUM_THREADS and
// forces it to 1 when it is unset (paddle/base/__init__.py, __bootstrap__), so
// a pod given four CPUs trains on one. A container that says how many CPUs
// it is given (its request, which defaults to its limit) gets that many
// threads, rounded up, in OMP_NUM_THREADS and MKL_NUM_THREADS (MKL's own
// pool, which follows OMP's when unset but not in every build). Not the
// limit: it may exceed what the node can give every pod at once, and more
// threads than cores make Paddle slower (BenchmarkCPUThreads measured a
// collective job's two workers, each limited to 2 CPUs on a 2-core node,
// 21.1 s with 2 threads against 12.0 s with 1).
//
// Paddle's launcher writes its logs under ./log and fails when the working
// directory cannot be written. A container with a read-only root file
// system gets PADDLE_LOG_DIR on an emptyDir of its pod instead.

// threadEnvNames are the variables that size a Paddle process's CPU threads.
var threadEnvNames = []string{"OMP_NUM_THREADS", "MKL_NUM_THREADS"}

const (
	envPIR    = "FLAGS_enable_pir_api"
	envLogDir = "PADDLE_LOG_DIR"
	// logVolume is the emptyDir that holds the launcher's logs of
	// containers whose root file system is read-only.
	logVolume    = "paddle-log"
	logMountPath = "/var/log/paddle"
)

// cpuThreads is how many threads a container's CPUs allow: its CPU
// request, else its limit (the API server's default request), rounded up;
// false when it names neither.
func cpuThreads(c *corev1.Container) (int64, bool) {
	q, ok := c.Resources.Requests[corev1.ResourceCPU]
	if !ok || q.IsZero() {
		q, ok = c.Resources.Limits[corev1.ResourceCPU]
	}
	if !ok || q.IsZero() {
		return 0, false
	}
	return (q.MilliValue() + 999) / 1000, true
}

// tuneCPU sets a container's thread variables from its CPUs (see above).
func tuneCPU(c *corev1.Container) {
	if hasEnv(c.Env, threadEnvNames...) {
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
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || hasEnv(c.Env, envLogDir) {
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

// tunePod tunes every container of a pod of a job in mode (init
// containers too: they may run Paddle) and adds the log volume where one
// needs it.
func tunePod(spec *corev1.PodSpec, mode paddlev1.PaddleJobMode) {
	needsLogs := false
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			c := &cs[i]
			if len(c.EnvFrom) > 0 {
				continue
			}
			if mode == paddlev1.PaddleJobModePS && !hasEnv(c.Env, envPIR) {
				c.Env = append(c.Env, corev1.EnvVar{Name: envPIR, Value: "0"})
			}
			tuneCPU(c)
			if giveLogDir(c) {
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
