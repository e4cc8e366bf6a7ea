package controller

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/paddlefailure"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

var updateFailureVectors = flag.Bool("update-failure-vectors", false, "write the operator's failure messages into test/vectors/failures (review the diff!)")

// failureVectorsDir holds the cases both SDKs read an explanation from a
// job's status with (test/vectors/README.md).
const failureVectorsDir = "../../../test/vectors/failures"

// failureVector is one shared case: a job's status and the explanation the
// SDKs must find in it (none: null).
type failureVector struct {
	Description string                     `json:"description"`
	MadeFrom    *failureSource             `json:"made_from,omitempty"`
	Status      failureStatus              `json:"status"`
	Expected    *paddlefailure.Explanation `json:"expected"`
}

type failureStatus struct {
	Phase      paddlev1.PaddleJobPhase `json:"phase"`
	Conditions []failureCondition      `json:"conditions"`
}

type failureCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// failureSource is the failure whose message the operator made: a captured
// log (internal/paddlefailure/testdata) in a pod of a job, on the local
// cluster's node.
type failureSource struct {
	Log      string               `json:"log"`
	Job      string               `json:"job"` // ps or collective
	Role     paddlev1.ReplicaType `json:"role"`
	ExitCode int32                `json:"exit_code"`
	Reason   string               `json:"reason"`
}

// pod is the failed pod the operator explains.
func (s failureSource) pod(t *testing.T) *corev1.Pod {
	b := testutil.MakePaddleJob("mm", "team-a").Workers(2)
	if s.Job == "ps" {
		b = b.PS(2)
	}
	pod := newPod(b.Obj(), s.Role, 0, podcontract.PortRange{First: 23000, Count: 3}, podOptions{InitImage: "busybox:1.36"})
	pod.Spec.NodeName = "paddlejob-node"
	pod.Status.Phase = corev1.PodFailed
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "paddle", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: s.ExitCode, Reason: s.Reason, Message: capturedLog(t, s.Log),
	}}}}
	// As the operator's cache keeps it.
	cached, err := stripPodForCache(pod)
	if err != nil {
		t.Fatal(err)
	}
	return cached.(*corev1.Pod)
}

// message is describeFailure's message for the source.
func (s failureSource) message(t *testing.T) string { return describeFailure(s.pod(t)) }

// explanation is the table's explanation of the source.
func (s failureSource) explanation(t *testing.T) *paddlefailure.Explanation {
	p := s.pod(t)
	return paddlefailure.Explain(p, "paddle", p.Status.ContainerStatuses[0].State.Terminated)
}

// failureVectors are the cases: the conditions as the operator writes them
// (restart.go's and status.go's messages around describeFailure's).
func failureVectors(t *testing.T) map[string]failureVector {
	collective := failureSource{Log: "collective-program-in-ps-job-3.0.0", Job: "ps", Role: paddlev1.ReplicaPS, ExitCode: 1, Reason: "Error"}
	race := failureSource{Log: "trainer-before-server-3.0.0", Job: "ps", Role: paddlev1.ReplicaWorker, ExitCode: 1, Reason: "Error"}
	module := failureSource{Log: "missing-module-3.0.0", Job: "collective", Role: paddlev1.ReplicaWorker, ExitCode: 1, Reason: "Error"}
	oom := failureSource{Log: "out-of-memory-3.0.0", Job: "collective", Role: paddlev1.ReplicaWorker, ExitCode: 137, Reason: "OOMKilled"}
	unknown := failureSource{Log: "out-of-memory-3.0.0", Job: "collective", Role: paddlev1.ReplicaWorker, ExitCode: 3, Reason: "Error"}
	cond := func(typ string, st metav1.ConditionStatus, reason, msg string) failureCondition {
		return failureCondition{Type: typ, Status: string(st), Reason: reason, Message: msg}
	}
	explained := func(s failureSource) *paddlefailure.Explanation { return s.explanation(t) }
	return map[string]failureVector{
		"failed-collective-program-in-ps-job": {
			Description: "a collective program in a parameter-server job: a pserver failed the job (restartPolicy Never)",
			MadeFrom:    &collective,
			Status: failureStatus{Phase: paddlev1.PaddleJobFailed, Conditions: []failureCondition{
				cond(paddlev1.JobFailed, metav1.ConditionTrue, ReasonPodFailed, collective.message(t)),
			}},
			Expected: explained(collective),
		},
		"restarted-trainer-before-server": {
			Description: "a trainer reached a server before it listened; the job restarted and runs again: the Restarting condition keeps the cause",
			MadeFrom:    &race,
			Status: failureStatus{Phase: paddlev1.PaddleJobRunning, Conditions: []failureCondition{
				cond(paddlev1.JobRestarting, metav1.ConditionFalse, ReasonRestarted, "every pod runs again; "+fmt.Sprintf("restart %d (backoffLimit %d), %s after %s", 1, 6, "restarting all 4 pods of the job", race.message(t))),
			}},
			Expected: explained(race),
		},
		"recreating-pods-out-of-memory": {
			Description: "two workers ran out of memory; the failed pods are being recreated (restartScope Pod)",
			MadeFrom:    &oom,
			Status: failureStatus{Phase: paddlev1.PaddleJobRunning, Conditions: []failureCondition{
				cond(paddlev1.JobRestarting, metav1.ConditionTrue, ReasonPodFailed, fmt.Sprintf("restart %d (backoffLimit %d), %s after %s", 2, 6, "recreating the failed pods", oom.message(t)+" (and 1 more failed pods)")),
			}},
			Expected: explained(oom),
		},
		"backoff-limit-missing-module": {
			Description: "a worker kept failing on a missing module until the backoff limit",
			MadeFrom:    &module,
			Status: failureStatus{Phase: paddlev1.PaddleJobFailed, Conditions: []failureCondition{
				cond(paddlev1.JobRestarting, metav1.ConditionFalse, "JobFinished", "the job finished"),
				cond(paddlev1.JobFailed, metav1.ConditionTrue, ReasonBackoffLimitExceeded, fmt.Sprintf("the job's pods restarted %d times, more than backoffLimit %d; last failure: %s", 7, 6, module.message(t))),
			}},
			Expected: explained(module),
		},
		"failed-unknown-after-explained-restart": {
			Description: "the job restarted after a known failure, then failed of one the table does not know: the latest failure has no explanation",
			MadeFrom:    &unknown,
			Status: failureStatus{Phase: paddlev1.PaddleJobFailed, Conditions: []failureCondition{
				cond(paddlev1.JobRestarting, metav1.ConditionFalse, ReasonRestarted, "every pod runs again; restart 1 (backoffLimit 6), restarting all 4 pods of the job after "+race.message(t)),
				cond(paddlev1.JobFailed, metav1.ConditionTrue, ReasonPodFailed, unknown.message(t)),
			}},
		},
		"running-no-failure": {
			Description: "a job that never failed",
			Status: failureStatus{Phase: paddlev1.PaddleJobRunning, Conditions: []failureCondition{
				cond(paddlev1.JobRunning, metav1.ConditionTrue, "AllPodsRunning", "every pod runs"),
			}},
		},
	}
}

// The shared vectors hold the messages the operator writes today, and the
// explanations in them; -update-failure-vectors rewrites them.
func TestFailureVectorsAreTheOperatorsMessages(t *testing.T) {
	for name, v := range failureVectors(t) {
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, '\n')
		path := filepath.Join(failureVectorsDir, name+".json")
		if *updateFailureVectors {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s is not what the operator writes today (%v): go test ./internal/operator/controller -run TestFailureVectors -update-failure-vectors, and review the diff", path, err)
		}
	}
}
