package validation

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// tunableEnv are the contract variables a template may set to tune, not
// break, the job: the GPUs a process selects, the collective backend,
// POD_IP, which the docs suggest taking from the downward API, and an
// elastic launcher's restart budget. Setting one is warned about
// (templateWarnings); setting any other contract variable is refused.
var tunableEnv = map[string]bool{"FLAGS_selected_gpus": true, "PADDLE_DISTRI_BACKEND": true, "POD_IP": true, "PADDLE_MAX_RESTART": true}

// ElasticRankNames are the variables that would fix an elastic worker's
// rank in Paddle's launcher: PADDLE_TRAINER_ID (read into the launcher's
// rank when it is 0 or more, as the legacy elastic launcher reads it too)
// and PADDLE_RANK. Elastic pods get neither, and their templates may not
// set them: with a fixed rank the launcher fails (IndexError in
// sync_peers) once a worker of a lower rank is gone.
var ElasticRankNames = []string{"PADDLE_TRAINER_ID", "PADDLE_RANK"}

// validateTemplates refuses what a template would override of the job's
// environment contract (docs/env-contract.md): a variable the operator sets
// (two workers with one PADDLE_TRAINER_ID, a PADDLE_MASTER no pod serves),
// and a fixed rank in an elastic job. (The host network outside Host
// intranet the schema refuses.)
func (v *Validator) validateTemplates(spec *paddlev1.PaddleJobSpec) field.ErrorList {
	var errs field.ErrorList
	eachRole(spec, func(rt paddlev1.ReplicaType, rs *paddlev1.ReplicaSpec, path *field.Path) {
		contract := envByName(podcontract.FirstPodEnv(spec, rt))
		eachEnv(rs, path, func(p *field.Path, e corev1.EnvVar) {
			_, set := contract[e.Name]
			switch {
			case spec.IsElastic() && slices.Contains(ElasticRankNames, e.Name):
				errs = append(errs, field.Invalid(p.Child("name"), e.Name,
					"would fix the worker's rank, which Paddle's elastic launcher gives each live worker itself: with a fixed rank the launcher fails (IndexError in sync_peers) once a worker of a lower rank is gone; remove it"))
			case set && !tunableEnv[e.Name]:
				errs = append(errs, field.Invalid(p.Child("name"), e.Name,
					"is set by the operator (the environment contract, docs/env-contract.md): a template's value would override it and break the job; remove it (a template may set only "+tunableNames()+" of the contract's variables)"))
			}
		})
	})
	return errs
}

// tunableNames lists tunableEnv for messages, in a stable order.
func tunableNames() string {
	var names []string
	for n := range tunableEnv {
		names = append(names, n)
	}
	slices.Sort(names)
	return paddlev1.OneOf(names)
}

// envByName indexes a contract's variables by name.
func envByName(env []corev1.EnvVar) map[string]corev1.EnvVar {
	out := make(map[string]corev1.EnvVar, len(env))
	for _, e := range env {
		out[e.Name] = e
	}
	return out
}

// eachEnv calls fn on every variable of a role's containers and init
// containers, with its path.
func eachEnv(rs *paddlev1.ReplicaSpec, path *field.Path, fn func(*field.Path, corev1.EnvVar)) {
	for _, list := range []struct {
		kind string
		cs   []corev1.Container
	}{{"initContainers", rs.Template.Spec.InitContainers}, {"containers", rs.Template.Spec.Containers}} {
		for i, c := range list.cs {
			for j, e := range c.Env {
				fn(path.Child(list.kind).Index(i).Child("env").Index(j), e)
			}
		}
	}
}
