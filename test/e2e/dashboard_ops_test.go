package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// TestDashboardSuspendsAndResumesAJob operates a running job from its page
// in headless Chromium, as a user would, with the user's kubeconfig: Suspend
// (clicked) deletes its pods and the job is Suspended; Resume (pressed with
// the keyboard) runs it again; Delete asks first, Escape leaves the job
// alone and Enter deletes it. The job's worker reports a loss every second
// (docs/progress.md), and its curve marks the suspension.
func TestDashboardSuspendsAndResumesAJob(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	ns := newNamespace(t, pj)
	job := testutil.MakePaddleJob("dash-ops", ns).Workers(1).Image("busybox:1.36").
		Command(paddlev1.ReplicaWorker, "sh", "-c", reportLoss).Obj()
	url := startDashboard(t, "-n", ns)
	browser := newBrowser(t)
	createJob(t, pj, job)
	ctx, cancel := context.WithTimeout(browser, 10*time.Minute)
	defer cancel()

	page := newTab(t, ctx)
	do(t, page, "open the job's page", chromedp.Navigate(fmt.Sprintf("%s#/job/%s/%s", url, ns, job.Name)),
		chromedp.WaitVisible(`[data-testid=phase]`))
	markPage(t, page)
	waitPage(t, page, "the job's page shows it running", 3*time.Minute, `document.querySelector('[data-testid=phase]')?.dataset.phase === 'Running'`)
	waitPage(t, page, "the loss curve has points before the suspension", 2*time.Minute,
		`Number(document.querySelector('figure[data-metric=loss]')?.dataset.points) >= 2`)

	do(t, page, "click Suspend", chromedp.Click(`button[data-action=suspend]`))
	waitPage(t, page, "the job's page shows it suspended", 2*time.Minute, `document.querySelector('[data-testid=phase]')?.dataset.phase === 'Suspended'`)
	waitPage(t, page, "the page says it suspended it", time.Minute,
		`document.querySelector('[data-testid=outcome]')?.dataset.ok === 'true' && document.querySelector('[data-testid=outcome]').textContent.includes('suspended')`)
	got, err := pj.Get(context.Background(), ns, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Spec.IsSuspended() || got.Status.Phase != paddlev1.PaddleJobSuspended {
		t.Fatalf("after Suspend: spec.suspend %v, phase %s", got.Spec.IsSuspended(), got.Status.Phase)
	}
	waitPods(t, pj, ns, job.Name) // none

	do(t, page, "press Resume with the keyboard", chromedp.Focus(`button[data-action=resume]`), chromedp.KeyEvent("\r"))
	if _, err := pj.WaitFor(context.Background(), ns, job.Name, client.Running, 3*time.Minute); err != nil {
		dumpJob(t, pj, ns, job.Name)
		t.Fatal(err)
	}
	waitPage(t, page, "the job's page shows it running again", time.Minute, `document.querySelector('[data-testid=phase]')?.dataset.phase === 'Running'`)

	// The timeline has both transitions; the curve goes on after the
	// resumption, the suspension marked on it, a gap not drawn through.
	waitPage(t, page, "the timeline shows the suspension and the resumption", time.Minute,
		`!!document.querySelector('[data-testid=timeline] li[data-type=Suspended][data-status=True]') && !!document.querySelector('[data-testid=timeline] li[data-type=Suspended][data-status=False]')`)
	resumedAt := evaluate[int](t, page, `Number(document.querySelector('figure[data-metric=loss]')?.dataset.points)`)
	waitPage(t, page, "the loss curve goes on after the resumption", 2*time.Minute,
		fmt.Sprintf(`Number(document.querySelector('figure[data-metric=loss]')?.dataset.points) > %d`, resumedAt))
	waitPage(t, page, "the loss curve marks the suspension", time.Minute,
		`document.querySelector('figure[data-metric=loss]')?.dataset.suspensions === '1'`)
	screenshot(t, page, "dashboard-job-suspended-once.png")

	// Delete asks first: Escape leaves the job alone.
	do(t, page, "open the delete dialog with the keyboard", chromedp.Focus(`button[data-action=delete]`), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(`dialog[data-testid=confirm-delete]`))
	do(t, page, "press Escape", chromedp.KeyEvent(kb.Escape), chromedp.WaitNotPresent(`dialog[data-testid=confirm-delete]`))
	if _, err := pj.Get(context.Background(), ns, job.Name); err != nil {
		t.Fatalf("after Escape: %v", err)
	}
	// Enter deletes: the dialog's focus starts on Delete.
	do(t, page, "open the delete dialog", chromedp.Click(`button[data-action=delete]`), chromedp.WaitVisible(`dialog[data-testid=confirm-delete]`))
	do(t, page, "press Enter", chromedp.KeyEvent("\r"))
	if err := pj.WaitDeleted(context.Background(), ns, job.Name, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	waitPage(t, page, "the page says the job is gone", time.Minute, `document.querySelector('main')?.innerText.includes('does not exist')`)
	unreloaded(t, page, "the job's page")
}

// reportLoss is a worker that reports a falling loss every second, as a
// training program reports its metrics (docs/progress.md), with busybox's
// wget; a report refused (too frequent) is only skipped.
const reportLoss = `i=0
while true; do
  i=$((i+1))
  wget -q -O /dev/null --header "Authorization: Bearer $(cat "$PADDLEJOB_PROGRESS_TOKEN_FILE")" \
    --header "Content-Type: application/json" \
    --post-data "{\"step\": $i, \"metrics\": {\"loss\": $((1000 / i))}}" "$PADDLEJOB_PROGRESS_URL" || true
  sleep 1
done`
