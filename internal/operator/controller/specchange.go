package controller

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/validation"
)

// Spec changes while the job runs: the admission webhook refuses changing
// a field a started job's pods are made from and cannot follow (the Fixed
// fields of validation.PodFields: its roles, their templates, intranet,
// Gloo level, scheduling policy, the elastic fields) unless the job is
// suspended. Where the webhook is not installed, the controller holds the
// line itself: every pod records what it was made from (AnnotationSpecHash,
// validation.SpecHash), and while a pod made from another spec lives, no
// pod is made from the new one — a job never mixes pods of two specs.
// Suspending and resuming the job applies the change.

// ReasonSpecChanged is the Created condition's reason while a changed spec
// holds pod creation back.
const ReasonSpecChanged = "SpecChangedWhileRunning"

// specHashes are what each role's pods are made from (validation.SpecHash).
func specHashes(spec *paddlev1.PaddleJobSpec) map[paddlev1.ReplicaType]string {
	out := map[paddlev1.ReplicaType]string{}
	for _, rt := range paddlev1.ReplicaTypes {
		if spec.Replicas(rt) != nil {
			out[rt] = validation.SpecHash(spec, rt)
		}
	}
	return out
}

// specChangedWhileRunning says which fields changed since the job's live
// pods were made, "" when none did (or no live pod records it); now are the
// job's specHashes.
func specChangedWhileRunning(job *paddlev1.PaddleJob, now map[paddlev1.ReplicaType]string, live []*corev1.Pod) string {
	changed := map[string]bool{}
	var fields []string
	for _, p := range live {
		rt, _, ok := podIndex(p)
		was, recorded := p.Annotations[paddlev1.AnnotationSpecHash]
		if !ok || !recorded || job.Spec.Replicas(rt) == nil || p.DeletionTimestamp != nil || was == now[rt] {
			continue
		}
		for _, f := range validation.ChangedFields(was, &job.Spec, rt) {
			if !changed[f] {
				changed[f] = true
				fields = append(fields, f)
			}
		}
	}
	if len(fields) == 0 {
		return ""
	}
	return strings.Join(fields, ", ") + " changed while the job's pods run (the admission webhook, which refuses that, is not installed): " +
		"no pod is made from the new spec while pods of the old one live; suspend and resume the job to apply it, or restore the spec"
}
