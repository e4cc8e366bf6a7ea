package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// Warnings name what a job may hold but should not: deprecated spellings,
// fields this operator ignores, and layouts that work only if the program
// does what the operator cannot see. The webhook returns them to the client;
// the job is accepted.
func (v *Validator) Warnings(job *paddlev1.PaddleJob) []string {
	var out []string
	spec := &job.Spec
	if spec.CleanPolicy != "" {
		out = append(out, "spec.cleanPolicy is deprecated (paddle-operator's spelling): use spec.cleanPodPolicy")
	}
	if spec.Worker != nil && (spec.Worker.Requests != nil || spec.Worker.Limits != nil) {
		out = append(out, "spec.worker.requests and spec.worker.limits are paddle-operator's elastic bounds: prefer spec.elasticPolicy.minReplicas and maxReplicas")
	}
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaHeter} {
		if rs := spec.Replicas(rt); rs != nil && (rs.Requests != nil || rs.Limits != nil) {
			out = append(out, fmt.Sprintf("spec.%s.requests and limits are ignored: only workers are elastic", rt))
		}
	}
	if spec.SchedulingPolicy != nil && podcontract.GangScheduler(spec, v.Settings.gang()) == "" {
		out = append(out, fmt.Sprintf("spec.schedulingPolicy is ignored: the operator runs without a gang scheduler (--gang-scheduler=none) and no template names one (schedulerName %s)",
			paddlev1.OneOf(v.Settings.gangSchedulerNames())))
	}
	if spec.IsElastic() && (spec.ElasticPolicy == nil || len(spec.ElasticPolicy.EtcdEndpoints) == 0) && !v.Settings.ElasticEtcd {
		out = append(out, "the job is elastic but names no etcd (spec.elasticPolicy.etcdEndpoints) and the operator has none: PADDLE_MASTER stays unset and Paddle's launcher will not run elastic")
	}
	if spec.ProgressDeadlineSeconds != nil && !v.Settings.ProgressReports {
		out = append(out, "spec.progressDeadlineSeconds is ignored: the operator takes no progress reports (--progress-bind-address=0), so none can come")
	}
	out = append(out, v.templateWarnings(spec)...)
	out = append(out, launcherWarnings(spec)...)
	out = append(out, v.glooWarnings(spec)...)
	if spec.Elastic != nil && *spec.Elastic == 0 {
		out = append(out, "spec.elastic: 0 changes nothing (elastic training is off by default)")
	}
	return out
}

// WarningsOnUpdate are the warnings of an updated job, and that a finished
// job's spec changes nothing.
func (v *Validator) WarningsOnUpdate(old, updated *paddlev1.PaddleJob) []string {
	out := v.Warnings(updated)
	if old.Status.IsFinished() && !equality.Semantic.DeepEqual(old.Spec, updated.Spec) {
		out = append(out, fmt.Sprintf("the job has %s: changes to its spec have no effect", old.Status.Phase))
	}
	return out
}

// templateWarnings name what in the templates looks odd without breaking
// the job: a tunable contract variable set to a value of the template's
// own, a fixed port on the host network.
func (v *Validator) templateWarnings(spec *paddlev1.PaddleJobSpec) []string {
	var out []string
	eachRole(spec, func(rt paddlev1.ReplicaType, rs *paddlev1.ReplicaSpec, path *field.Path) {
		contract := envByName(podcontract.FirstPodEnv(spec, rt))
		eachEnv(rs, path, func(p *field.Path, e corev1.EnvVar) {
			ours, set := contract[e.Name]
			if !set || !tunableEnv[e.Name] || sameFieldRef(e, ours) {
				return
			}
			out = append(out, fmt.Sprintf("%s sets %s, which the operator sets too: the template's value wins", p.Child("name"), e.Name))
		})
		if spec.Intranet != paddlev1.IntranetHost {
			return
		}
		for i, c := range rs.Template.Spec.Containers {
			for j, port := range c.Ports {
				if port.ContainerPort != 0 {
					out = append(out, fmt.Sprintf("%s is %d: in Host intranet it is a port of the node, and two pods of the job on one node would clash on it; use the ports the operator hands out (PADDLE_PORT, PADDLE_PORTS_NUM)",
						path.Child("containers").Index(i).Child("ports").Index(j).Child("containerPort"), port.ContainerPort))
				}
			}
		}
	})
	return out
}

// sameFieldRef reports whether two variables take their value from the same
// field of the pod (POD_IP from status.podIP, as the operator sets it where
// pods are addressed by IP).
func sameFieldRef(a, b corev1.EnvVar) bool {
	if a.ValueFrom == nil || b.ValueFrom == nil || a.ValueFrom.FieldRef == nil || b.ValueFrom.FieldRef == nil {
		return false
	}
	return a.ValueFrom.FieldRef.FieldPath == b.ValueFrom.FieldRef.FieldPath
}

// Layouts where Paddle's own launcher (python -m paddle.distributed.launch)
// cannot run a pod's process as the operator describes it, whatever the
// environment: the job is accepted (the program may be started some other
// way by the script the template runs) and warned about, naming the fix.
// docs/env-contract.md gives Paddle's source lines.

// launcherModule is what a container's command or args name to run Paddle's
// launcher, directly or inside a shell line.
const launcherModule = "paddle.distributed.launch"

// launcherWarnings warns about heter pods started by Paddle's launcher: its
// parameter-server mode starts only PSERVER and TRAINER processes, those
// whose endpoint starts with the pod's address; a heter trainer's endpoint
// is in neither list, so it starts nothing and stops with "No container in
// the pod". (In Host intranet parameter-server pods are addressed by name,
// so pods sharing a node each start only their own process.)
func launcherWarnings(spec *paddlev1.PaddleJobSpec) []string {
	if spec.PS == nil || spec.Heter == nil || !runsLauncher(spec.Heter) {
		return nil
	}
	return []string{fmt.Sprintf(
		"spec.heter.template runs %s, which cannot start a heter trainer: in parameter-server mode it starts only the servers and trainers of PADDLE_SERVERS_ENDPOINTS and PADDLE_TRAINERS_ENDPOINTS, none of which is a heter pod, and stops with \"No container in the pod\"; run the program directly (python train.py): the operator's environment gives it its role (TRAINING_ROLE=HETER_TRAINER)",
		launcherModule)}
}

// runsLauncher reports whether a container of the role starts Paddle's
// launcher.
func runsLauncher(rs *paddlev1.ReplicaSpec) bool {
	return launcherContainer(rs) >= 0
}

// launcherContainer is the index of the role's first container that starts
// Paddle's launcher, -1 when none does (or there is no role).
func launcherContainer(rs *paddlev1.ReplicaSpec) int {
	if rs == nil {
		return -1
	}
	for i, c := range rs.Template.Spec.Containers {
		if strings.Contains(strings.Join(append(append([]string(nil), c.Command...), c.Args...), " "), launcherModule) {
			return i
		}
	}
	return -1
}
