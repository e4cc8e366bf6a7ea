package dashboard

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// JobRow is one line of the jobs page: what a user scans a thousand jobs
// for, computed on the server so the browser receives a few hundred bytes a
// job instead of the whole object, and only for jobs whose line changed.
type JobRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Phase is the status' phase, "Submitted" before the operator wrote one.
	Phase string `json:"phase"`
	Mode  string `json:"mode,omitempty"`
	// Roles are the job's roles in order (ps, worker, heter).
	Roles []RoleReady `json:"roles"`
	// Restarts counts the job's restarts and recreated pods
	// (status.restartCount) and the restarts in place of its current pods.
	Restarts int32 `json:"restarts"`
	// Percent, ETASeconds, Epoch, TotalEpochs and Step are the training
	// program's latest report (status.progress); ProgressTime is when it
	// came, from which the browser counts the ETA down.
	Percent      *int32     `json:"percent,omitempty"`
	ETASeconds   *int64     `json:"etaSeconds,omitempty"`
	ProgressTime *time.Time `json:"progressTime,omitempty"`
	Epoch        *int64     `json:"epoch,omitempty"`
	TotalEpochs  *int64     `json:"totalEpochs,omitempty"`
	// Metric is the first metric the program reported, as kubectl get -o
	// wide shows it.
	Metric  *Metric   `json:"metric,omitempty"`
	Created time.Time `json:"created"`
	// Reason is the reason of the job's most telling condition (why it
	// failed, is suspended or restarting).
	Reason string `json:"reason,omitempty"`
}

// RoleReady is a role's pods: running of replicas.
type RoleReady struct {
	Role     string `json:"role"`
	Ready    string `json:"ready"`
	Replicas int32  `json:"replicas"`
	Running  int32  `json:"running"`
}

// Metric is a named metric's latest value, as the status holds it.
type Metric struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SubmittedPhase is shown for a job the operator has not given a phase yet.
const SubmittedPhase = "Submitted"

// rowOf summarises a job for the jobs page.
func rowOf(j *paddlev1.PaddleJob) JobRow {
	st := &j.Status
	r := JobRow{
		Namespace: j.Namespace,
		Name:      j.Name,
		Phase:     string(st.Phase),
		Mode:      string(st.Mode),
		Restarts:  st.RestartCount,
		Created:   j.CreationTimestamp.Time,
		Reason:    reasonOf(j),
		Roles:     []RoleReady{},
	}
	if r.Phase == "" {
		r.Phase = SubmittedPhase
	}
	if r.Mode == "" {
		r.Mode = string(j.Spec.Mode())
	}
	for _, rt := range paddlev1.ReplicaTypes {
		spec := j.Spec.Replicas(rt)
		if spec == nil {
			continue
		}
		rr := RoleReady{Role: string(rt), Replicas: spec.Replicas, Ready: fmt.Sprintf("0/%d", spec.Replicas)}
		if rs := st.ReplicaStatus(rt); rs != nil {
			rr.Running = rs.Running
			if rs.Ready != "" {
				rr.Ready = rs.Ready
			}
			r.Restarts += rs.Restarts
		}
		r.Roles = append(r.Roles, rr)
	}
	if p := st.Progress; p != nil {
		r.Percent, r.ETASeconds, r.Epoch, r.TotalEpochs = p.Percent, p.EstimatedSecondsRemaining, p.Epoch, p.TotalEpochs
		if p.LastUpdateTime != nil {
			t := p.LastUpdateTime.Time
			r.ProgressTime = &t
		}
		if len(p.Metrics) > 0 {
			r.Metric = &Metric{Name: p.Metrics[0].Name, Value: p.Metrics[0].Value}
		}
	}
	return r
}

// reasonOf is the reason a user most needs: why the job failed, waits, is
// suspended or restarting; "" for a job going well.
func reasonOf(j *paddlev1.PaddleJob) string {
	for _, t := range []string{paddlev1.JobFailed, paddlev1.JobSuspended, paddlev1.JobRestarting} {
		for _, c := range j.Status.Conditions {
			if c.Type == t && c.Status == "True" {
				return c.Reason
			}
		}
	}
	if c := meta.FindStatusCondition(j.Status.Conditions, paddlev1.JobRunning); c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == paddlev1.ReasonUnschedulable || c.Reason == paddlev1.ReasonCannotStart) {
		return c.Reason
	}
	return ""
}
