package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// describe shows why a container failed, what to do and its last lines; a
// job whose pods are gone keeps the explanation in its conditions.
func TestDescribeShowsFailures(t *testing.T) {
	log, err := os.ReadFile(filepath.Join("..", "..", "internal", "paddlefailure", "testdata", "logs", "read-only-file-system-3.0.0.log"))
	if err != nil {
		t.Fatal(err)
	}
	j := jobWithProgress()
	j.Status.Phase = paddlev1.PaddleJobFailed
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wd-worker-0", Labels: map[string]string{paddlev1.LabelJobName: "wd"}},
		Spec: corev1.PodSpec{
			NodeName:   "paddlejob-node",
			Volumes:    []corev1.Volume{{Name: "output", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/runs"}}}},
			Containers: []corev1.Container{{Name: "paddle", VolumeMounts: []corev1.VolumeMount{{Name: "output", MountPath: "/output"}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "paddle", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: string(log)},
		}}}},
	}
	var out bytes.Buffer
	describeJob(&out, &j, []corev1.Pod{pod}, nil, nil, time.Now())
	got := out.String()
	for _, want := range []string{
		"Failures:\n  wd-worker-0/paddle exited with code 1 (Error)\n",
		"    Known failure:  read-only-file-system\n",
		"    Cause:          The program could not write /output/run-1: it is on hostPath volume output (/data/runs) at /output,",
		"paddlejob up\n                    --host-path-rw /data/runs",
		"    More:           docs/paddle-known-issues.md#a-write-to-a-read-only-volume\n",
		"    Last lines:\n",
		"      OSError: [Errno 30] Read-only file system: '/output/run-1'\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("describe lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got[strings.Index(got, "    Last lines:"):strings.Index(got, "Events:")], "\n"); n != 1+maxLastLines {
		t.Errorf("%d lines after Last lines, want %d", n-1, maxLastLines)
	}

	// The pods are gone (cleanPodPolicy): the conditions keep the explanation.
	msg := `pod wd-worker-0: container "paddle" exited with code 1 (Error): ModuleNotFoundError: No module named 'sklearn'. ` +
		`Known failure [missing-module]: The program imports the module sklearn, which the container's image does not have. ` +
		`Fix: Add sklearn to the image. See docs/paddle-known-issues.md#a-python-module-the-image-does-not-have`
	j.Status.Conditions = []metav1.Condition{{Type: paddlev1.JobFailed, Status: metav1.ConditionTrue, Reason: "PodFailed", Message: msg}}
	out.Reset()
	describeJob(&out, &j, nil, nil, nil, time.Now())
	if want := "Failures:\n  the job's latest failure (its conditions; the pod is gone):\n    Known failure:  missing-module\n"; !strings.Contains(out.String(), want) {
		t.Errorf("describe lacks %q:\n%s", want, out.String())
	}

	// Nothing failed: no section.
	j.Status.Conditions = nil
	out.Reset()
	describeJob(&out, &j, nil, nil, nil, time.Now())
	if strings.Contains(out.String(), "Failures:") {
		t.Errorf("describe of a job that did not fail:\n%s", out.String())
	}
}
