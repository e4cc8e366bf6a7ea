package dashboard

import (
	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// FailureView is what the job page says of the job's latest failure: the
// explanation of a known failure (from the job's conditions, which outlive
// its pods, else from the failed container) and, while the pod exists, the
// container's last lines.
type FailureView struct {
	Explanation *client.Explanation `json:"explanation,omitempty"`
	// Pod and Container failed; empty when the pod is gone.
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	ExitCode  *int32 `json:"exitCode,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// LastLines is the end of the container's log the kubelet kept.
	LastLines string `json:"lastLines,omitempty"`
}

// failureOf is the job's latest failure: the failed container the job's
// explanation names (else the first failed container) with its last lines,
// and the explanation; nil when nothing failed.
func failureOf(j *paddlev1.PaddleJob, pods []corev1.Pod) *FailureView {
	explained := client.FailureExplanation(j)
	failures := client.ContainerFailures(pods)
	if explained == nil && len(failures) == 0 {
		return nil
	}
	v := &FailureView{Explanation: explained}
	if len(failures) == 0 {
		return v
	}
	f := failures[0]
	for _, g := range failures {
		if explained != nil && g.Explanation != nil && g.Explanation.ID == explained.ID {
			f = g
			break
		}
	}
	v.Pod, v.Container, v.ExitCode, v.Reason, v.LastLines = f.Pod, f.Container, &f.ExitCode, f.Reason, f.LastLines
	if v.Explanation == nil {
		v.Explanation = f.Explanation
	}
	return v
}
