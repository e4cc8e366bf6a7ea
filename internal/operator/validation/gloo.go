package validation

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// Gloo over a shared directory: a parameter-server job with spec.withGloo 1
// or 2 whose ps and worker templates set PADDLE_GLOO_FS_PATH meets over
// Paddle's file-system rendezvous, the only one where Paddle (2.6, 3.0)
// builds the servers' group and the group of all processes; without it the
// operator gives the job Paddle's HTTP store, served beside ps-0, where only
// the workers get a group (internal/operator/podcontract/gloo.go,
// docs/env-contract.md).

// GlooFSPath is the variable naming the shared directory.
const GlooFSPath = podcontract.GlooFSPath

// glooDirSetting is one container's PADDLE_GLOO_FS_PATH, with its path.
type glooDirSetting struct {
	path      *field.Path
	container corev1.Container
	env       corev1.EnvVar
}

// glooDirSettings are the PADDLE_GLOO_FS_PATH of the ps and worker
// containers, by role, where the operator reads them: a parameter-server job
// with Gloo on. nil for any other job.
func glooDirSettings(spec *paddlev1.PaddleJobSpec) map[paddlev1.ReplicaType][]glooDirSetting {
	if spec.PS == nil || spec.GlooLevel() == 0 {
		return nil
	}
	out := map[paddlev1.ReplicaType][]glooDirSetting{}
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		rs := spec.Replicas(rt)
		if rs == nil {
			continue
		}
		for i, c := range rs.Template.Spec.Containers {
			for j, e := range c.Env {
				if e.Name == GlooFSPath {
					p := field.NewPath("spec", string(rt), "template", "spec", "containers").Index(i).Child("env").Index(j)
					out[rt] = append(out[rt], glooDirSetting{path: p, container: c, env: e})
				}
			}
		}
	}
	return out
}

// validateGlooDir refuses a shared directory the job's pods would not agree
// on: every process of the rendezvous must read and write the same one, so
// each of spec.ps and spec.worker sets it, to one absolute path (or one
// source), or neither does.
func validateGlooDir(spec *paddlev1.PaddleJobSpec) field.ErrorList {
	settings := glooDirSettings(spec)
	var first *glooDirSetting
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		if len(settings[rt]) > 0 && first == nil {
			first = &settings[rt][0]
		}
	}
	if first == nil {
		return nil
	}
	const why = "Paddle's file-system rendezvous for Gloo (spec.withGloo 1 or 2) needs one directory every pod of the job reads and writes"
	var errs field.ErrorList
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		if i := launcherContainer(spec.Replicas(rt)); i >= 0 {
			// The launcher gives its processes the HTTP store, whoever
			// sets the directory: the servers would get no group, and
			// ps-0's process would serve the store and listen only after
			// the trainers had gone on to push to it.
			errs = append(errs, field.Forbidden(field.NewPath("spec", string(rt), "template", "spec", "containers").Index(i).Child("command"),
				fmt.Sprintf("runs %s, which gives the processes it starts Gloo's HTTP store (PADDLE_GLOO_RENDEZVOUS=3) and a %s of its own, so the shared directory %s sets would not be used: run the program directly (python train.py) to meet over the directory, or remove %s to meet over the HTTP store", launcherModule, GlooFSPath, first.path, GlooFSPath)))
		}
		if len(settings[rt]) == 0 {
			errs = append(errs, field.Required(field.NewPath("spec", string(rt), "template", "spec", "containers").Index(0).Child("env"),
				fmt.Sprintf("%s sets %s: set it in spec.%s's template too, to the same directory (%s)", first.path, GlooFSPath, rt, why)))
		}
		for _, s := range settings[rt] {
			switch {
			case s.env.ValueFrom == nil && !path.IsAbs(s.env.Value):
				errs = append(errs, field.Invalid(s.path.Child("value"), s.env.Value,
					"must be an absolute path: the directory of Gloo's file-system rendezvous, on a volume every pod of the job mounts read-write"))
			case !equality.Semantic.DeepEqual(s.env, first.env):
				errs = append(errs, field.Invalid(s.path.Child("value"), s.env.Value,
					fmt.Sprintf("must be the same in every container of spec.ps and spec.worker (%s is %q): %s", first.path, first.env.Value, why)))
			}
		}
	}
	return errs
}

// glooWarnings: level 2 without a shared directory (the servers get no
// group), level 2 with one (the servers listen only after the trainers
// joined them), and a shared directory on none of the container's volumes.
func (v *Validator) glooWarnings(spec *paddlev1.PaddleJobSpec) []string {
	if spec.PS == nil || spec.GlooLevel() == 0 {
		return nil
	}
	if envByName(podcontract.FirstPodEnv(spec, paddlev1.ReplicaPS))["PADDLE_GLOO_RENDEZVOUS"].Value != "2" {
		if spec.GlooLevel() != 2 {
			return nil
		}
		return []string{fmt.Sprintf(`spec.withGloo is 2 but no container of spec.ps or spec.worker sets %[1]s: the operator then gives the job Gloo's HTTP store, over which Paddle builds the workers' group only, not the servers' or the group of all processes: the workers run at level 2, the servers without Gloo (fleet.util calls on "server" or "all" fail); set %[1]s in both templates to a directory on a volume every pod of the job mounts read-write (a ReadWriteMany PersistentVolumeClaim, NFS) and the operator uses Paddle's file-system rendezvous`, GlooFSPath)}
	}
	var out []string
	if spec.GlooLevel() == 2 {
		out = append(out, `spec.withGloo is 2 over a shared directory: every parameter server joins the group of all processes inside fleet.init(), so it listens only after the trainers joined it too, and Paddle's init_worker() pushes the parameters to the servers without waiting for them (Paddle 3.0's wait_server_ready returns at once): the trainers must wait for the servers before fleet.init_worker() — paddlejob.wait_for_servers(fleet.server_endpoints()) does — or the job fails with "push dense param failed"; level 1 needs no wait`)
	}
	settings := glooDirSettings(spec)
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		for _, s := range settings[rt] {
			if s.env.ValueFrom == nil && path.IsAbs(s.env.Value) && !onVolume(s.env.Value, s.container.VolumeMounts) {
				out = append(out, fmt.Sprintf("%s: %s %q is on none of the container's volumeMounts: the job's pods share it only on a volume they all mount (a ReadWriteMany PersistentVolumeClaim, NFS, a hostPath on one node)", s.path, GlooFSPath, s.env.Value))
			}
		}
	}
	return out
}

// onVolume reports whether a path is at or below one of a container's
// volume mounts.
func onVolume(p string, mounts []corev1.VolumeMount) bool {
	p = path.Clean(p)
	for _, m := range mounts {
		mp := path.Clean(m.MountPath)
		if p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/") {
			return true
		}
	}
	return false
}
