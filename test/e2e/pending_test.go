package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// A job whose workers ask for 1000 CPUs, more than the local node has, says
// so wherever a user looks: its phase is Pending and its Running condition
// quotes the scheduler, naming the pods; get -o wide and describe show it;
// the dashboard's jobs page gives the reason and the job's page each pod's
// reason in the scheduler's words. (The Python SDK's pending_reason:
// python/tests/e2e/test_pending_job.py, run by TestPythonSDK.)
func TestUnschedulableJobSaysWhy(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	ns := newNamespace(t, pj)
	job := testutil.MakePaddleJob("huge", ns).Workers(2).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sh", "-c", "exec sleep 600").Obj()
	job.Spec.Worker.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}
	url := startDashboard(t, "-n", ns)
	browser := newBrowser(t)
	createJob(t, pj, job)

	// The scheduler tries the pods one by one: the job says so of both
	// once it has tried both.
	const want = "the scheduler cannot place huge-worker-0, huge-worker-1: 0/1 nodes are available: 1 Insufficient cpu."
	held, err := pj.WaitFor(context.Background(), ns, job.Name, func(j *paddlev1.PaddleJob) (bool, error) {
		c := meta.FindStatusCondition(j.Status.Conditions, paddlev1.JobRunning)
		return j.Status.Phase == paddlev1.PaddleJobPending && c != nil && c.Reason == paddlev1.ReasonUnschedulable && c.Message == want, nil
	}, 2*time.Minute)
	if err != nil {
		dumpJob(t, pj, ns, job.Name)
		t.Fatal(err)
	}
	if w := held.Status.Worker; w == nil || w.Pending != 2 || w.Ready != "0/2" {
		t.Errorf("worker status %+v, want 2 pending", w)
	}

	env := []string{"KUBECONFIG=" + cluster.Kubeconfig()}
	if out, _, code := paddlejobCLI(t, env, "get", job.Name, "-n", ns, "-o", "wide"); code != 0 ||
		!strings.Contains(out, "Pending") || !strings.Contains(out, paddlev1.ReasonUnschedulable) {
		t.Errorf("get -o wide: exit %d:\n%s", code, out)
	}
	if out, _, code := paddlejobCLI(t, env, "describe", job.Name, "-n", ns); code != 0 ||
		!strings.Contains(out, "Insufficient cpu") || !strings.Contains(out, "needs 1000 CPU") {
		t.Errorf("describe: exit %d:\n%s", code, out)
	}

	ctx, cancel := context.WithTimeout(browser, 3*time.Minute)
	defer cancel()
	row := fmt.Sprintf(`tr[data-job="%s/%s"]`, ns, job.Name)
	page := newTab(t, ctx)
	do(t, page, "open the jobs page", chromedp.Navigate(url), chromedp.WaitVisible(row))
	waitPage(t, page, "the jobs page says why the job is pending", time.Minute,
		fmt.Sprintf(`/^Pending\s+Unschedulable$/.test(document.querySelector('%s td[data-col=phase]')?.textContent ?? '')`, row))
	do(t, page, "open the job", chromedp.Click(row+" a"), chromedp.WaitVisible(`[data-testid=phase]`))
	for _, pod := range []string{"huge-worker-0", "huge-worker-1"} {
		waitPage(t, page, pod+"'s reason", time.Minute,
			fmt.Sprintf(`/^Unschedulable\s*0\/1 nodes are available: 1 Insufficient cpu/.test(document.querySelector('tr[data-pod="%s"] td:nth-child(3)')?.textContent ?? '')`, pod))
	}
}
