package webhook

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Layouts where Paddle's own launcher (python -m paddle.distributed.launch)
// cannot run a pod's process as the operator describes it, whatever the
// environment: the job is accepted (the program may be started some other
// way by the script the template runs) and warned about, naming the fix.
// docs/env-contract.md gives Paddle's source lines.

// launcherModule is what a container's command or args name to run Paddle's
// launcher, directly or inside a shell line.
const launcherModule = "paddle.distributed.launch"

// hostnameTopology is the node a pod runs on, as anti-affinity names it.
const hostnameTopology = "kubernetes.io/hostname"

// launcherWarnings warns about parameter-server pods started by Paddle's
// launcher where it cannot start exactly the pod's own process:
//
//   - heter trainers: its parameter-server mode starts only PSERVER and
//     TRAINER processes, those whose endpoint starts with the pod's address;
//     a heter trainer's endpoint is in neither list, so it starts nothing
//     and stops with "No container in the pod";
//   - Host intranet without one node per pod: it starts every server and
//     trainer endpoint that starts with its address, so pods of the job on
//     one node each start the processes of all of them.
func launcherWarnings(job *paddlev1.PaddleJob) []string {
	spec := &job.Spec
	if spec.PS == nil {
		return nil
	}
	var out []string
	if spec.Heter != nil && runsLauncher(spec.Heter) {
		out = append(out, fmt.Sprintf(
			"spec.heter.template runs %s, which cannot start a heter trainer: in parameter-server mode it starts only the servers and trainers of PADDLE_SERVERS_ENDPOINTS and PADDLE_TRAINERS_ENDPOINTS, none of which is a heter pod, and stops with \"No container in the pod\"; run the program directly (python train.py): the operator's environment gives it its role (TRAINING_ROLE=HETER_TRAINER)",
			launcherModule))
	}
	if spec.EffectiveIntranet() != paddlev1.IntranetHost {
		return out
	}
	var sharing []string
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		rs := spec.Replicas(rt)
		if runsLauncher(rs) && !onNodeOfItsOwn(job, rs) {
			sharing = append(sharing, "spec."+string(rt))
		}
	}
	if len(sharing) > 0 {
		out = append(out, fmt.Sprintf(
			"%s run %s in Host intranet, where pods of the job on one node share its address: the launcher starts every server and trainer endpoint of its address, so each such pod would start the others' processes too; use spec.intranet: PodIP, or give spec.ps and spec.worker a required pod anti-affinity on %s over the job's pods (%s=%s) so each pod has a node of its own",
			strings.Join(sharing, " and "), launcherModule, hostnameTopology, paddlev1.LabelJobName, job.Name))
	}
	return out
}

// runsLauncher reports whether a container of the role starts Paddle's
// launcher.
func runsLauncher(rs *paddlev1.ReplicaSpec) bool {
	for _, c := range rs.Template.Spec.Containers {
		if strings.Contains(strings.Join(append(append([]string(nil), c.Command...), c.Args...), " "), launcherModule) {
			return true
		}
	}
	return false
}

// onNodeOfItsOwn reports whether a role's pods may not share a node with any
// parameter-server or worker pod of the job: a required anti-affinity term
// on the node's hostname whose selector matches every such pod, in the
// pod's own namespace.
func onNodeOfItsOwn(job *paddlev1.PaddleJob, rs *paddlev1.ReplicaSpec) bool {
	aff := rs.Template.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil {
		return false
	}
	for _, term := range aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey == hostnameTopology && len(term.Namespaces) == 0 && term.NamespaceSelector == nil && selectsEveryPod(job, term.LabelSelector) {
			return true
		}
	}
	return false
}

// selectsEveryPod reports whether a selector matches the labels every
// parameter-server and worker pod of the job carries: its template's and
// the operator's.
func selectsEveryPod(job *paddlev1.PaddleJob, s *metav1.LabelSelector) bool {
	if s == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil || sel.Empty() {
		return false
	}
	for _, rt := range []paddlev1.ReplicaType{paddlev1.ReplicaPS, paddlev1.ReplicaWorker} {
		rs := job.Spec.Replicas(rt)
		for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
			set := labels.Set{}
			for k, v := range rs.Template.Labels {
				set[k] = v
			}
			set[paddlev1.LabelJobName] = job.Name
			set[paddlev1.LabelReplicaType] = string(rt)
			set[paddlev1.LabelReplicaIndex] = fmt.Sprint(i)
			if !sel.Matches(set) {
				return false
			}
		}
	}
	return true
}
