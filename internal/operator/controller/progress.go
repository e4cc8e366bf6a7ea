package controller

// Training progress (docs/progress.md): pods get a token and a URL to report
// to the operator's progress endpoint (internal/operator/progress), which
// keeps the latest report of each job; the status pass copies it into
// status.progress, at most every --progress-status-interval and within the
// write budget all jobs share (--progress-writes-per-second).

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/progress"
)

const (
	// progressVolume holds the pod's token for the progress endpoint.
	progressVolume = "paddlejob-progress-token"
	// progressMountPath is where the training containers find it.
	progressMountPath = "/var/run/secrets/batch.paddlepaddle.org/progress"
	// progressTokenSeconds is the token's lifetime; the kubelet renews it
	// at 80% of it.
	progressTokenSeconds = 3600
)

// ProgressOptions turn on the progress reports.
type ProgressOptions struct {
	// Store is where the endpoint keeps the reports; nil turns the feature
	// off (no token, no variables in pods, no status.progress).
	Store *progress.Store
	// URL is the endpoint's base URL as pods reach it.
	URL string
}

// injectProgress gives every training container of a pod the variables and
// the token to report its job's progress with.
func injectProgress(pod *corev1.Pod, job *paddlev1.PaddleJob, baseURL string) {
	if baseURL == "" {
		return
	}
	spec := &pod.Spec
	if !hasVolume(spec.Volumes, progressVolume) {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: progressVolume, VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{
				ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
					Audience: progress.Audience, ExpirationSeconds: ptr.To[int64](progressTokenSeconds), Path: "token",
				},
			}}},
		}})
	}
	env := []corev1.EnvVar{
		{Name: progress.EnvURL, Value: baseURL + progress.ReportPath(job.Namespace, job.Name)},
		{Name: progress.EnvTokenFile, Value: progressMountPath + "/token"},
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		c.Env = mergeEnv(c.Env, env)
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || m.Name == progressVolume || m.MountPath == progressMountPath
		}
		if !mounted {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: progressVolume, MountPath: progressMountPath, ReadOnly: true})
		}
	}
}

// copyProgress puts the job's latest reported progress into the status the
// pass computed, when it is due: at once for a final report (100%) or a
// status that finishes the job; else at most every StatusInterval, at the
// slot the write budget gives it, the pass asking to come back then.
func (r *PaddleJobReconciler) copyProgress(job *paddlev1.PaddleJob, st *paddlev1.PaddleJobStatus) (requeue time.Duration) {
	store := r.Options.Progress.Store
	if store == nil {
		return 0
	}
	p, wait := store.Take(types.NamespacedName{Namespace: job.Namespace, Name: job.Name}, job.UID, st.Progress, st.IsFinished())
	if p != nil {
		st.Progress = p
	}
	return wait
}

// watchProgress brings a job back when a report of it is due.
func (r *PaddleJobReconciler) watchProgress(b *builder.Builder) *builder.Builder {
	if r.Options.Progress.Store == nil {
		return b
	}
	return b.WatchesRawSource(source.Channel(r.Options.Progress.Store.Events(), &handler.EnqueueRequestForObject{}))
}
