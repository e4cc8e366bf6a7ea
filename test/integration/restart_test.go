package integration

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// A parameter server killed by SIGSEGV restarts the whole parameter-server
// job: one restart counted, every pod recreated (servers and trainers), the
// Restarting condition and an event naming the pod and the signal; once the
// new pods run, Restarting turns False and nothing more is counted.
func TestParameterServerCrashRestartsTheWholeJob(t *testing.T) {
	startOperator(t, fastBackoff)
	ns := newNamespace(t)
	job := testutil.MakePaddleJob("wd", ns).PS(2).Workers(2).Intranet(paddlev1.IntranetService).
		RolePolicy(paddlev1.ReplicaPS, paddlev1.RestartPolicyExitCode).
		RolePolicy(paddlev1.ReplicaWorker, paddlev1.RestartPolicyExitCode).Obj()
	createJob(t, job)
	names := podNames("wd", 2, 2, 0)
	before := waitForPods(t, ns, "wd", names...)
	runPods(t, ns, names...)
	waitForPhase(t, ns, "wd", paddlev1.PaddleJobRunning)

	setPodStatus(t, ns, "wd-ps-1", failedWith("paddle", 139))
	for _, name := range names {
		waitRecreated(t, ns, name, before[name].UID)
	}
	restarting := waitForCondition(t, ns, "wd", paddlev1.JobRestarting, metav1.ConditionTrue, "PodFailed")
	c := meta.FindStatusCondition(restarting.Status.Conditions, paddlev1.JobRestarting)
	if restarting.Status.RestartCount != 1 || !strings.Contains(c.Message, `restarting all 4 pods of the job after pod wd-ps-1: container "paddle" exited with code 139 (signal SIGSEGV`) {
		t.Errorf("restart %d, Restarting %q", restarting.Status.RestartCount, c.Message)
	}
	waitForEvent(t, ns, "wd", "RestartingJob", "pod wd-ps-1")

	runPods(t, ns, names...)
	running := waitForCondition(t, ns, "wd", paddlev1.JobRestarting, metav1.ConditionFalse, "Restarted")
	if running.Status.RestartCount != 1 || running.Status.Phase != paddlev1.PaddleJobRunning || len(running.Status.RecreatingPods) != 0 {
		t.Errorf("after the restart: count %d, phase %s, recreatingPods %v", running.Status.RestartCount, running.Status.Phase, running.Status.RecreatingPods)
	}
}
