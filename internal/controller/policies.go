package controller

import (
	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// cleansTerminatedPods reports whether cleanPodPolicy deletes the terminated
// pods of a job that finished in the given phase.
func cleansTerminatedPods(policy paddlev1.CleanPodPolicy, phase paddlev1.PaddleJobPhase) bool {
	switch policy {
	case paddlev1.CleanPodPolicyAlways:
		return true
	case paddlev1.CleanPodPolicyOnFailure:
		return phase == paddlev1.PaddleJobFailed
	case paddlev1.CleanPodPolicyOnCompletion:
		return phase == paddlev1.PaddleJobCompleted
	default:
		return false
	}
}

// podsToDeleteWhenFinished is what a finished job deletes: pods still running
// (parameter servers and heter trainers once the workers are done, the other
// pods of a failed job) always, since a finished job holds no resources, and
// terminated pods when cleanPodPolicy says so.
func podsToDeleteWhenFinished(job *paddlev1.PaddleJob, pods []*corev1.Pod) []*corev1.Pod {
	clean := cleansTerminatedPods(job.Spec.EffectiveCleanPodPolicy(), job.Status.Phase)
	var out []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		terminated := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if !terminated || clean {
			out = append(out, p)
		}
	}
	return out
}
