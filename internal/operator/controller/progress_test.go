package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/operator/progress"
)

func progressJob() *paddlev1.PaddleJob {
	job := &paddlev1.PaddleJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wd", UID: "uid-wd"}}
	job.Spec.Worker = &paddlev1.ReplicaSpec{Replicas: 1, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "paddle", Image: "paddle"}, {Name: "sidecar", Image: "busybox"}},
	}}}
	return job
}

func TestPodsGetTheProgressTokenAndURLOnlyWhenOn(t *testing.T) {
	job := progressJob()
	off := newPod(job, paddlev1.ReplicaWorker, 0, podcontract.PortRange{First: 30000, Count: 1}, podOptionsFor(job, DefaultOptions()))
	if hasVolume(off.Spec.Volumes, progressVolume) {
		t.Error("the token volume is there with the feature off")
	}
	for _, e := range off.Spec.Containers[0].Env {
		if e.Name == progress.EnvURL || e.Name == progress.EnvTokenFile {
			t.Errorf("%s is set with the feature off", e.Name)
		}
	}

	opts := DefaultOptions()
	opts.Progress = ProgressOptions{Store: progress.NewStore(progress.Options{}), URL: "http://127.0.0.1:9444"}
	pod := newPod(job, paddlev1.ReplicaWorker, 0, podcontract.PortRange{First: 30000, Count: 1}, podOptionsFor(job, opts))
	var vol *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == progressVolume {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Projected == nil || len(vol.Projected.Sources) != 1 {
		t.Fatalf("no projected token volume: %+v", pod.Spec.Volumes)
	}
	tok := vol.Projected.Sources[0].ServiceAccountToken
	if tok == nil || tok.Audience != progress.Audience || tok.Path != "token" || *tok.ExpirationSeconds != progressTokenSeconds {
		t.Errorf("token projection %+v, want audience %s", tok, progress.Audience)
	}
	for _, c := range pod.Spec.Containers {
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if got, want := env[progress.EnvURL], "http://127.0.0.1:9444/v1/namespaces/ns/paddlejobs/wd/progress"; got != want {
			t.Errorf("container %s: %s=%q, want %q", c.Name, progress.EnvURL, got, want)
		}
		if env[progress.EnvTokenFile] != progressMountPath+"/token" {
			t.Errorf("container %s: %s=%q", c.Name, progress.EnvTokenFile, env[progress.EnvTokenFile])
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || (m.Name == progressVolume && m.MountPath == progressMountPath && m.ReadOnly)
		}
		if !mounted {
			t.Errorf("container %s does not mount the token read-only", c.Name)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		for _, m := range c.VolumeMounts {
			if m.Name == progressVolume {
				t.Errorf("init container %s mounts the token", c.Name)
			}
		}
	}
}

func TestStatusPassCopiesProgressAtMostEveryInterval(t *testing.T) {
	job := progressJob()
	store := progress.NewStore(progress.Options{StatusInterval: time.Hour, ReportRate: 100, ReportBurst: 100})
	r := NewReconciler(nil, nil, Options{Progress: ProgressOptions{Store: store, URL: "http://x"}})
	key := types.NamespacedName{Namespace: "ns", Name: "wd"}
	put := func(pct float64, metrics ...progress.Metric) {
		t.Helper()
		if err := store.Put(key, job.UID, "wd-worker-0", 0, progress.Report{Percent: &pct, Metrics: metrics}); err != nil {
			t.Fatal(err)
		}
	}

	st := paddlev1.PaddleJobStatus{Phase: paddlev1.PaddleJobRunning}
	if wait := r.copyProgress(job, &st); st.Progress != nil || wait != 0 {
		t.Fatalf("progress %+v (wait %v) before any report", st.Progress, wait)
	}
	put(20, progress.Metric{Name: "auc", Value: 0.61})
	if wait := r.copyProgress(job, &st); st.Progress == nil || *st.Progress.Percent != 20 || wait != 0 {
		t.Fatalf("first report not copied at once: %+v", st.Progress)
	}
	put(40)
	next := st
	wait := r.copyProgress(job, &next)
	if *next.Progress.Percent != 20 || wait <= 0 || wait > time.Hour {
		t.Errorf("copied %d%% within the interval (wait %v); want 20%% kept and a requeue", *next.Progress.Percent, wait)
	}
	// The pass that finishes the job writes the status anyway: the latest
	// goes with it.
	finished := st
	finished.Phase = paddlev1.PaddleJobCompleted
	r.copyProgress(job, &finished)
	if *finished.Progress.Percent != 40 || finished.Progress.Metrics[0].Value != "0.61" {
		t.Errorf("finishing status got %+v, want 40%% with auc 0.61", finished.Progress)
	}
	// Another job of the same name is not given this one's progress.
	other := progressJob()
	other.UID = "uid-other"
	fresh := paddlev1.PaddleJobStatus{}
	if r.copyProgress(other, &fresh); fresh.Progress != nil {
		t.Errorf("a new job of the same name got the old one's progress: %+v", fresh.Progress)
	}
}
