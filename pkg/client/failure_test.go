package client

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// failureVectorsDir holds the job statuses both SDKs find a failure's
// explanation in (test/vectors/README.md).
const failureVectorsDir = "../../test/vectors/failures"

// Each shared status gives the explanation the vector expects, as the
// Python SDK's JobStatus.failure_explanation gives it.
func TestFailureExplanationVectors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(failureVectorsDir, "*.json"))
	if err != nil || len(files) < 5 {
		t.Fatalf("shared failure vectors missing in %s: %v %v", failureVectorsDir, files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				Status   paddlev1.PaddleJobStatus `json:"status"`
				Expected *Explanation             `json:"expected"`
			}
			if err := json.Unmarshal(data, &v); err != nil {
				t.Fatal(err)
			}
			got := FailureExplanation(&paddlev1.PaddleJob{Status: v.Status})
			switch {
			case v.Expected == nil && got != nil:
				t.Errorf("explained as %+v, want none", got)
			case v.Expected != nil && (got == nil || *got != *v.Expected):
				t.Errorf("explained as %+v\nwant %+v", got, v.Expected)
			}
		})
	}
}

func TestContainerFailures(t *testing.T) {
	term := func(code int32, reason, msg string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: msg}}
	}
	module := "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nModuleNotFoundError: No module named 'sklearn'"
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "j-ps-0"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "paddle", State: term(0, "Completed", "")},
		}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "j-worker-0"}, Status: corev1.PodStatus{
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "setup", State: term(2, "Error", "no data")}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "paddle", RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, LastTerminationState: term(1, "Error", module)},
				{Name: "sidecar", State: term(137, "OOMKilled", "")},
			},
		}},
	}
	got := ContainerFailures(pods)
	if len(got) != 3 {
		t.Fatalf("%d failures, want 3 (the init container, the restarted one, the killed one): %+v", len(got), got)
	}
	if f := got[0]; f.Pod != "j-worker-0" || f.Container != "setup" || !f.Init || f.ExitCode != 2 || f.LastLines != "no data" || f.Explanation != nil {
		t.Errorf("first failure %+v, want the init container's", f)
	}
	if f := got[1]; f.Container != "paddle" || !f.Restarted || f.Explanation == nil || f.Explanation.ID != "missing-module" {
		t.Errorf("second failure %+v, want the restarted container's, explained as missing-module", f)
	}
	if f := got[2]; f.Container != "sidecar" || f.Reason != "OOMKilled" || f.Explanation == nil || f.Explanation.ID != "out-of-memory" {
		t.Errorf("third failure %+v, want the sidecar out of memory", f)
	}
}
