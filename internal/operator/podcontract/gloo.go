package podcontract

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Gloo (spec.withGloo): seed 004's levels are 0 off, 1 on the workers, 2 on
// the workers and the parameter servers. Paddle's role maker
// (fleet/base/role_maker.py, _gloo_init and Gloo.init) reads the level and a
// rendezvous from the environment:
//
//   - the HTTP store (PADDLE_GLOO_RENDEZVOUS=3), served by ps-0 (worker-0 in
//     collective mode), needs nothing from the cluster, but Paddle 2.6 and 3.0
//     build only the workers' group over it: at level 2 a parameter-server
//     job gets no servers' group and no group of all processes;
//   - the file-system rendezvous (PADDLE_GLOO_RENDEZVOUS=2) builds the
//     workers' group, the servers' group and, at level 2, the group of all
//     processes, in PADDLE_GLOO_FS_PATH: a directory every process reads and
//     writes.
//
// The operator cannot assume the cluster has a directory every pod shares,
// so a job that wants the second brings one: its ps and worker templates set
// PADDLE_GLOO_FS_PATH to a path on a volume all its pods mount (validation
// refuses two different paths; it warns about level 2 without one).
// docs/env-contract.md gives Paddle's file:line.

// GlooFSPath is the shared directory of the file-system rendezvous; the
// job's templates set it, never the operator.
const GlooFSPath = "PADDLE_GLOO_FS_PATH"

// Paddle's rendezvous kinds (PADDLE_GLOO_RENDEZVOUS).
const (
	glooRendezvousFile = "2"
	glooRendezvousHTTP = "3"
)

// UsesGlooFiles reports whether pods of a role meet over the file-system
// rendezvous: in parameter-server mode with Gloo on and PADDLE_GLOO_FS_PATH
// in the templates, on the servers and workers. Heter pods keep the HTTP
// store, where Paddle builds no group for them: over files the role maker
// would put a heter trainer in the servers' group, under a server's rank.
func UsesGlooFiles(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) bool {
	return spec.PS != nil && spec.GlooLevel() > 0 && rt != paddlev1.ReplicaHeter && hasGlooFSPath(spec)
}

// hasGlooFSPath reports whether a container of the ps or worker template sets
// PADDLE_GLOO_FS_PATH (validation makes them all agree).
func hasGlooFSPath(spec *paddlev1.PaddleJobSpec) bool {
	for _, rs := range []*paddlev1.ReplicaSpec{spec.PS, spec.Worker} {
		if rs == nil {
			continue
		}
		for _, c := range rs.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == GlooFSPath {
					return true
				}
			}
		}
	}
	return false
}

// GlooEnv is a pod's Gloo variables. PADDLE_WITH_GLOO is set at 0 too:
// Paddle's launcher turns Gloo on when the variable is unset (--with_gloo
// defaults to 1) and hands its children PADDLE_WITH_GLOO=1 without a
// rendezvous. Over the HTTP store the servers get 0 (GlooLevel). SYS_JOB_ID
// is the prefix of the store's keys: the job over the HTTP store, which lives
// and dies with ps-0's pod; the attempt (storePrefix) over files, which
// outlive it.
func GlooEnv(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType, jobID, storePrefix string) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: "PADDLE_WITH_GLOO", Value: strconv.Itoa(int(GlooLevel(&job.Spec, rt)))}}
	if job.Spec.GlooLevel() == 0 {
		return env
	}
	rendezvous, prefix := glooRendezvousHTTP, jobID
	if UsesGlooFiles(&job.Spec, rt) {
		rendezvous = glooRendezvousFile
		if storePrefix != "" {
			prefix = storePrefix
		}
	}
	return append(env,
		corev1.EnvVar{Name: "PADDLE_GLOO_RENDEZVOUS", Value: rendezvous},
		corev1.EnvVar{Name: "SYS_JOB_ID", Value: prefix},
	)
}

// GlooLevel is the PADDLE_WITH_GLOO of a role's pods: the job's level, but
// 0 on the servers of a job whose store the store container serves
// (gloostore.go). Over the HTTP rendezvous Paddle builds the workers' group
// only (role_maker.py _init_http: "TODO: initialize gloo for server and
// all"), so a server loses no group; at 0 ps-0 starts no store of its own
// and no server waits in fleet.init() for the workers, and a server's
// fleet.util calls return its own value with Paddle's warning rather than
// fail on a group that does not exist.
func GlooLevel(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) int32 {
	if rt == paddlev1.ReplicaPS && ServesGlooStore(spec) {
		return 0
	}
	return spec.GlooLevel()
}

// GlooWaitsForWorkers reports whether a parameter server's fleet.init returns
// only once the workers have joined Gloo, so that it listens only after
// them: at level 2 over files every server, which joins the group of all
// processes inside fleet.init(). (Over the HTTP store no server does:
// GlooLevel.)
func GlooWaitsForWorkers(spec *paddlev1.PaddleJobSpec, rt paddlev1.ReplicaType) bool {
	return rt == paddlev1.ReplicaPS && spec.GlooLevel() == 2 && UsesGlooFiles(spec, rt)
}

// ServesGlooStore reports whether the job's Gloo store is served by the
// store container: a parameter-server job with Gloo on over the HTTP
// rendezvous (no shared directory: UsesGlooFiles).
func ServesGlooStore(spec *paddlev1.PaddleJobSpec) bool {
	return spec.PS != nil && spec.GlooLevel() > 0 && !hasGlooFSPath(spec)
}
