package controller

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Spec changes while the job runs: the admission webhook refuses changing
// what a started job's pods are made from (its roles' templates, intranet,
// Gloo level, scheduling policy) unless the job is suspended. Where the
// webhook is not installed, the controller holds the line itself: every pod
// records what it was made from (AnnotationSpecHash), and while a pod made
// from another spec lives, no pod is made from the new one — a job never
// mixes pods of two specs. Suspending and resuming the job applies the
// change.

// ReasonSpecChanged is the Created condition's reason while a changed spec
// holds pod creation back.
const ReasonSpecChanged = "SpecChangedWhileRunning"

// specHashes are what each role's pods are made from, as
// "<template>-<job>": a hash of the role's template and one of the job-wide
// fields.
func specHashes(spec *paddlev1.PaddleJobSpec) map[paddlev1.ReplicaType]string {
	jobWide := hashOf(struct {
		Intranet   paddlev1.Intranet
		Gloo       int32
		Scheduling *paddlev1.SchedulingPolicy
	}{spec.EffectiveIntranet(), spec.GlooLevel(), spec.SchedulingPolicy})
	out := map[paddlev1.ReplicaType]string{}
	for _, rt := range paddlev1.ReplicaTypes {
		if rs := spec.Replicas(rt); rs != nil {
			out[rt] = hashOf(rs.Template) + "-" + jobWide
		}
	}
	return out
}

func hashOf(v any) string {
	data, _ := json.Marshal(v) // plain API types: always marshal
	h := fnv.New64a()
	_, _ = h.Write(data)
	return fmt.Sprintf("%016x", h.Sum64())
}

// specChangedWhileRunning says which fields changed since the job's live
// pods were made, "" when none did (or no live pod records it); now are the
// spec's hashes (specHashes).
func specChangedWhileRunning(job *paddlev1.PaddleJob, live []*corev1.Pod, now map[paddlev1.ReplicaType]string) string {
	changed := map[string]bool{}
	for _, p := range live {
		rt, _, ok := podIndex(p)
		was, recorded := p.Annotations[paddlev1.AnnotationSpecHash]
		if !ok || !recorded || job.Spec.Replicas(rt) == nil || p.DeletionTimestamp != nil {
			continue
		}
		wasTemplate, wasJob, _ := strings.Cut(was, "-")
		nowTemplate, nowJob, _ := strings.Cut(now[rt], "-")
		if wasTemplate != nowTemplate {
			changed["spec."+string(rt)+".template"] = true
		}
		if wasJob != nowJob {
			changed["spec.intranet, spec.withGloo or spec.schedulingPolicy"] = true
		}
	}
	if len(changed) == 0 {
		return ""
	}
	var fields []string
	for _, rt := range paddlev1.ReplicaTypes {
		if f := "spec." + string(rt) + ".template"; changed[f] {
			fields = append(fields, f)
		}
	}
	if f := "spec.intranet, spec.withGloo or spec.schedulingPolicy"; changed[f] {
		fields = append(fields, f)
	}
	return strings.Join(fields, " and ") + " changed while the job's pods run (the admission webhook, which refuses that, is not installed): " +
		"no pod is made from the new spec while pods of the old one live; suspend and resume the job to apply it, or restore the spec"
}
