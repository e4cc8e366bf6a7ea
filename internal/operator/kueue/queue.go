package kueue

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Queue tells the PaddleJob controller which jobs Kueue holds and why they
// wait (its controller.Queue): a held job has no pods, and its status is
// Queued with that reason.
type Queue struct {
	Reader client.Reader
	// Served says the cluster serves Kueue's Workloads (Discover).
	Served bool
}

// Hold says why Kueue keeps the job from running now, "" when it does not.
func (q Queue) Hold(ctx context.Context, pj *paddlev1.PaddleJob) (string, error) {
	if !queued(pj) {
		return "", nil
	}
	j := job{pj}
	if !q.Served {
		if j.IsSuspended() {
			return notServed(pj), nil
		}
		return "", nil // without Kueue the label means nothing to a running job
	}
	wl, _, err := readWorkload(ctx, q.Reader, j)
	if err != nil {
		return "", err
	}
	return holdMessage(j, wl), nil
}

// Watched are the objects whose changes change what Hold says: the jobs'
// Workloads.
func (q Queue) Watched() []client.Object {
	if !q.Served {
		return nil
	}
	return []client.Object{newUnstructured(WorkloadGVK)}
}

func notServed(pj *paddlev1.PaddleJob) string {
	return fmt.Sprintf("the job is labelled %s=%s but the cluster serves no Kueue Workloads (%s): install Kueue with %s in integrations.externalFrameworks, or remove the label",
		paddlev1.KueueQueueNameLabel, pj.KueueQueueName(), WorkloadGVK.GroupVersion(), paddlev1.KueueFrameworkName)
}

// holdMessage says why Kueue holds the job given its Workload (nil: none
// yet), "" when the job may run: its Workload is admitted and the Kueue
// controller has resumed it.
func holdMessage(j job, wl *workload) string {
	queue := j.KueueQueueName()
	switch {
	case wl == nil && j.prebuiltWorkload() != "":
		return fmt.Sprintf("waiting for Workload %s, which MultiKueue creates", j.prebuiltWorkload())
	case wl == nil:
		return fmt.Sprintf("waiting in Kueue LocalQueue %s; its Workload is being created", queue)
	case stageOf(wl) == stageFinished:
		c := findCondition(wl, workloadFinished)
		return fmt.Sprintf("Kueue's Workload %s finished without the job (%s: %s)", wl.Name, c.Reason, c.Message)
	case wl.DeletionTimestamp == nil && stageOf(wl) == stageAdmitted:
		if why := refusedAdmission(j, wl); why != "" {
			return why
		}
		if j.IsSuspended() {
			return fmt.Sprintf("admitted by Kueue (Workload %s); starting", wl.Name)
		}
		return ""
	}
	why := findCondition(wl, workloadQuotaReserved).Message
	if stageOf(wl) == stageEvicted {
		ev := findCondition(wl, workloadEvicted)
		why = fmt.Sprintf("Kueue evicted it (%s: %s)", ev.Reason, ev.Message)
	}
	if why == "" {
		why = "not admitted yet"
	}
	return fmt.Sprintf("waiting in Kueue LocalQueue %s for admission (Workload %s): %s", queue, wl.Name, why)
}
