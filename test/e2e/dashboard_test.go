package e2e

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// updateDashboardDocs copies the screenshots into docs/images for
// docs/dashboard.md: go test ./test/e2e -run '^TestDashboard$' -dashboard.docs
var updateDashboardDocs = flag.Bool("dashboard.docs", false, "copy TestDashboard's screenshots into docs/images")

// TestDashboard opens `paddlejob dashboard`, started as a user starts it, in
// headless Chromium while the wide & deep example trains on the local
// cluster, and reads the pages as a user would: the jobs page lists the job
// and shows it complete without being reloaded; the job's page follows
// worker 0's log to the last line the program printed, and draws its AUC
// curve with a point for every pass the program evaluated, ending at the
// AUC it printed. Screenshots go to the test's artifacts (go test
// -artifacts) and, with -dashboard.docs, to docs/images.
func TestDashboard(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	job := loadJob(t, "examples/jobs/wide-and-deep.yaml")
	job.Name = "wd-dashboard"
	outputDir(t, job)
	// Rows enough for the training to last a few minutes of pages to read.
	const passes = 5
	withArgs(job, fmt.Sprintf("--passes=%d", passes), "--rows=480000")
	job.Namespace = newNamespace(t, pj)
	url := startDashboard(t, "-n", job.Namespace)
	browser := newBrowser(t)

	createJob(t, pj, job)
	ctx, cancel := context.WithTimeout(browser, jobTimeout+3*time.Minute)
	defer cancel()
	row := fmt.Sprintf(`tr[data-job="%s/%s"]`, job.Namespace, job.Name)

	// The jobs page, in a tab of its own that stays open to the end.
	jobs := newTab(t, ctx)
	do(t, jobs, "open the jobs page", chromedp.Navigate(url), chromedp.WaitVisible(row))
	markPage(t, jobs)
	waitPage(t, jobs, "the jobs page shows the job running", jobTimeout,
		fmt.Sprintf(`document.querySelector('%s td[data-col=phase]')?.textContent.startsWith('Running')`, row))
	screenshot(t, jobs, "dashboard-jobs-running.png")

	// The job's page, opened from the jobs page with the keyboard.
	page := newTab(t, ctx)
	do(t, page, "open the jobs page in a second tab", chromedp.Navigate(url), chromedp.WaitVisible(row))
	do(t, page, "open the job with the keyboard", chromedp.Focus(row+" a"), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(`[data-testid=phase]`))
	markPage(t, page)
	waitPage(t, page, "the job's page shows it running", jobTimeout, `document.querySelector('[data-testid=phase]')?.dataset.phase === 'Running'`)

	// Follow worker 0's log while it trains.
	worker0 := paddlev1.PodName(job.Name, paddlev1.ReplicaWorker, 0)
	do(t, page, "open worker 0's log", chromedp.Click(fmt.Sprintf(`tr[data-pod="%s"] button`, worker0)),
		chromedp.WaitVisible(`pre[data-testid=log]`))
	waitPage(t, page, "the log follows worker 0", time.Minute, `document.querySelector('[data-testid=log-state]')?.dataset.state === 'following'`)

	// The job completes; both pages say so by themselves.
	done, err := pj.WaitFor(context.Background(), job.Namespace, job.Name, client.Finished, jobTimeout)
	if err != nil {
		dumpJob(t, pj, job.Namespace, job.Name)
		t.Fatal(err)
	}
	mustComplete(t, pj, done)
	waitPage(t, page, "the job's page shows it completed", time.Minute, `document.querySelector('[data-testid=phase]')?.dataset.phase === 'Completed'`)
	waitPage(t, jobs, "the jobs page shows it completed", time.Minute,
		fmt.Sprintf(`document.querySelector('%s td[data-col=phase]')?.textContent.startsWith('Completed')`, row))
	unreloaded(t, jobs, "the jobs page")
	unreloaded(t, page, "the job's page")
	screenshot(t, jobs, "dashboard-jobs.png")

	// What Paddle reported, from worker 0's own log: a line per pass, then
	// its final line with the test AUC.
	last, auc, evaluated := finalAUCOfWorker0(t, pj, job.Namespace, worker0, passes)

	// The followed log reaches the program's last line, and ends with the
	// container.
	waitPage(t, page, "the followed log reaches the program's last line", time.Minute,
		fmt.Sprintf(`document.querySelector('pre[data-testid=log]')?.textContent.trimEnd().endsWith(%q)`, last))
	waitPage(t, page, "the followed log ends with the container", time.Minute, `document.querySelector('[data-testid=log-state]')?.dataset.state === 'ended'`)

	// The AUC curve: a point for each pass evaluated (and the untrained
	// model's first), once the operator has written the history, ending at
	// the AUC the program printed.
	checkAUCCurve(t, page, evaluated, auc, last)
	screenshot(t, page, "dashboard-job.png")
	do(t, page, "show the curves by step", chromedp.Click(`input[name=xmode][value=step]`),
		chromedp.WaitVisible(`figure[data-metric=auc] .plot canvas`))
	do(t, page, "scroll to the log", chromedp.ScrollIntoView(`pre[data-testid=log]`))
	logShot := screenshotOf(t, page, `section.log`)
	saveScreenshot(t, "dashboard-log.png", logShot)
}

// finalAUCOfWorker0 reads what Paddle reported in the log of worker 0
// (pod), a line per pass, then its final line with the test AUC, and
// returns that last line, the AUC it printed (4 decimals) and the number
// of passes evaluated; it fails the test unless the log ends with the
// final line after at least passes passes.
func finalAUCOfWorker0(t *testing.T, pj *client.Client, ns, pod string, passes int) (last, auc string, evaluated int) {
	t.Helper()
	log := podLog(t, pj, ns, pod)
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	last = lines[len(lines)-1]
	evaluated = len(regexp.MustCompile(`(?m)^pass \d+/\d+: `).FindAllString(log, -1))
	m := regexp.MustCompile(`^final: trainer=0 trainers=2 test_auc=(\d\.\d{4}) `).FindStringSubmatch(last)
	if m == nil || evaluated < passes {
		t.Fatalf("worker 0's log ends %q after %d passes: want its final line, after %d passes", last, evaluated, passes)
	}
	return last, m[1], evaluated
}

// checkAUCCurve waits for the job page's AUC curve to have a point for
// each pass evaluated (and the untrained model's first), once the
// operator has written the history, and checks that it ends at auc, the
// AUC the program printed on its last line.
func checkAUCCurve(t *testing.T, page context.Context, evaluated int, auc, last string) {
	t.Helper()
	waitPage(t, page, fmt.Sprintf("the AUC curve has at least %d points", evaluated), 2*time.Minute,
		fmt.Sprintf(`Number(document.querySelector('figure[data-metric=auc]')?.dataset.points) >= %d`, evaluated))
	shown := evaluate[string](t, page, `[...document.querySelectorAll('figure[data-metric=auc] td[data-value]')].map(td => td.dataset.value).join(' ')`)
	values := strings.Fields(shown)
	final, err := strconv.ParseFloat(values[len(values)-1], 64)
	if err != nil || fmt.Sprintf("%.4f", final) != auc {
		t.Errorf("the AUC curve %v ends at %s, want the AUC worker 0 printed, %s", values, values[len(values)-1], auc)
	}
	points := evaluate[int](t, page, `Number(document.querySelector('figure[data-metric=auc]').dataset.points)`)
	t.Logf("the AUC curve has %d points for %d passes evaluated, ending at %.4f; the log's last line: %s", points, evaluated, final, last)
}

// BenchmarkDashboardJobs1000 measures the jobs page of `paddlejob
// dashboard` in headless Chromium with 1,000 PaddleJobs in its namespace:
// how long the page takes to show them all (load: from navigating to the
// rows on screen), and how long a change of one job takes to show (from
// the API server's answer to the browser's DOM: the watch event, the
// server's batch, the message and the render). The page's own timings
// (from a message's arrival to the next frame after the DOM changed) are
// reported beside them.
//
//	make bench-dashboard   (go test ./test/e2e -run '^$' -bench DashboardJobs -benchtime 5x)
func BenchmarkDashboardJobs1000(b *testing.B) {
	pj := suiteClient
	const n = 1000
	ns := newNamespace(b, pj)
	start := time.Now()
	for i := range n {
		// Suspended: the operator writes their status, but runs no pod.
		if _, err := pj.Create(context.Background(), suspendedJob(fmt.Sprintf("job-%04d", i), ns)); err != nil {
			b.Fatal(err)
		}
	}
	// Wait for the operator's status writes, so that they are not measured.
	poll(b, 10*time.Minute, fmt.Sprintf("%d jobs suspended", n), func() (bool, string) {
		list, err := pj.List(context.Background(), ns)
		if err != nil {
			return false, err.Error()
		}
		suspended := 0
		for _, j := range list {
			if j.Status.Phase == paddlev1.PaddleJobSuspended {
				suspended++
			}
		}
		return suspended == n, fmt.Sprintf("%d of %d suspended", suspended, n)
	})
	b.Logf("%d suspended jobs created and reconciled in %s", n, time.Since(start).Round(time.Second))
	url := startDashboard(b, "-n", ns)
	browser := newBrowser(b)
	tab := newTab(b, browser)

	count := func(want int) string {
		return fmt.Sprintf(`document.querySelector('[data-testid=summary]')?.dataset.count === '%d' && document.querySelectorAll('tr[data-job]').length > 0`, want)
	}
	var load, update, loadInPage, updateInPage time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		do(b, tab, "load the jobs page", chromedp.Navigate(url+"#/jobs?x="+strconv.Itoa(i)))
		waitPage(b, tab, "all rows shown", time.Minute, count(n)+" && window.__dashboardStats.snapshotMs !== undefined")
		load += time.Since(t0)
		loadInPage += time.Duration(evaluate[float64](b, tab, `window.__dashboardStats.snapshotMs`) * float64(time.Millisecond))

		extra := fmt.Sprintf("extra-%d", i)
		t0 = time.Now()
		batches := evaluate[int](b, tab, `window.__dashboardStats.batches`)
		if _, err := pj.Create(context.Background(), suspendedJob(extra, ns)); err != nil {
			b.Fatal(err)
		}
		waitPage(b, tab, "the new job shown", time.Minute, count(n+1)+fmt.Sprintf(" && window.__dashboardStats.batches > %d", batches))
		update += time.Since(t0)
		updateInPage += time.Duration(evaluate[float64](b, tab, `window.__dashboardStats.lastBatchMs`) * float64(time.Millisecond))
		b.StopTimer()
		if err := pj.Delete(context.Background(), ns, extra); err != nil && !apierrors.IsNotFound(err) {
			b.Fatal(err)
		}
		waitPage(b, tab, "the new job gone", time.Minute, count(n))
		b.StartTimer()
	}
	runs := float64(b.N)
	b.ReportMetric(load.Seconds()*1000/runs, "ms/load")
	b.ReportMetric(loadInPage.Seconds()*1000/runs, "ms/load-render")
	b.ReportMetric(update.Seconds()*1000/runs, "ms/update")
	b.ReportMetric(updateInPage.Seconds()*1000/runs, "ms/update-render")
}

// suspendedJob is a job the operator gives a status but runs no pod of.
func suspendedJob(name, ns string) *paddlev1.PaddleJob {
	job := client.NewJob(name, ns).Workers(1, client.Container("paddle", "registry.example.com/none:v1")).Obj()
	job.Spec.Suspend = ptr.To(true)
	return job
}

// startDashboard runs `paddlejob dashboard` on any free port against the
// test cluster, as a user starts it, and returns the URL it printed. When
// the test ends it is stopped with Ctrl-C, and must exit cleanly.
func startDashboard(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "paddlejob"), append([]string{"dashboard", "--kubeconfig", cluster.Kubeconfig(), "--port", "0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	var out syncBuffer
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.Write([]byte(sc.Text() + "\n"))
			if u := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=\S+`).FindString(sc.Text()); u != "" {
				urls <- u
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		if err != nil {
			t.Errorf("paddlejob dashboard did not exit cleanly on Ctrl-C: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), stderr.String())
		}
	})
	select {
	case u := <-urls:
		return u
	case <-time.After(time.Minute):
		t.Fatalf("paddlejob dashboard printed no URL within a minute\nstdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
	}
	return ""
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newBrowser starts Debian's Chromium, headless, with a fresh profile and
// no network of its own (no background requests: the machine may have no
// network). Tabs are chromedp.NewContext of the returned context.
func newBrowser(t testing.TB) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("no chromium on PATH (hack/setup.sh installs Debian's): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // the tests run as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancel()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	return ctx
}

// newTab opens a tab, which lives until the test ends (or ctx does).
func newTab(t testing.TB, ctx context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	// The tab lives as long as the context of its first run: this one, not
	// a step's with a timeout.
	if err := chromedp.Do(tab); err != nil {
		cancel()
		t.Fatalf("opening a tab: %v", err)
	}
	t.Cleanup(cancel)
	return tab
}

// do runs browser steps, failing the test with what it was doing.
func do(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(step, steps...); err != nil {
		failShot(t, ctx, what)
		t.Fatalf("%s: %v", what, err)
	}
}

// waitPage waits, up to within, until the page's JavaScript expression is
// true: a poll on the page's own state, every 10 ms. (Not at DOM changes
// only: the page's timings are set in a frame after one. Not at frames: a
// tab in the background has none.)
func waitPage(t testing.TB, ctx context.Context, what string, within time.Duration, expr string) {
	t.Helper()
	poll := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(within))
	if _, err := chromedp.Run(ctx, poll); err != nil {
		failShot(t, ctx, what)
		if errors.Is(err, chromedp.ErrPollingTimeout) {
			t.Fatalf("waiting %s for %s: it did not happen (page state: %s)", within, what, pageState(ctx))
		}
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func evaluate[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// markPage marks the document; unreloaded checks the mark is still there,
// so what the page showed since came without a reload.
func markPage(t testing.TB, ctx context.Context) {
	t.Helper()
	evaluate[bool](t, ctx, `(window.__e2eMark = true)`)
}

func unreloaded(t testing.TB, ctx context.Context, what string) {
	t.Helper()
	if !evaluate[bool](t, ctx, `window.__e2eMark === true`) {
		t.Errorf("%s was reloaded", what)
	}
}

func pageState(ctx context.Context) string {
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	text, err := chromedp.Run(short, chromedp.Evaluate[string](`location.href + '\n' + document.querySelector('main')?.innerText.slice(0, 3000)`))
	if err != nil {
		return err.Error()
	}
	return text
}

func screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	saveScreenshot(t, name, png)
}

func screenshotOf(t testing.TB, ctx context.Context, sel string) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.Screenshot(sel))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", sel, err)
	}
	return png
}

// docsScreenshots are the screenshots docs/dashboard.md shows.
var docsScreenshots = []string{"dashboard-jobs.png", "dashboard-job.png", "dashboard-log.png"}

// saveScreenshot writes a screenshot to the test's artifacts and, with
// -dashboard.docs, those the docs show to docs/images.
func saveScreenshot(t testing.TB, name string, png []byte) {
	t.Helper()
	dirs := []string{t.ArtifactDir()}
	if *updateDashboardDocs && slices.Contains(docsScreenshots, name) {
		dirs = append(dirs, filepath.Join(testenv.RepoRoot(), "docs", "images"))
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshot %s in %s", name, strings.Join(dirs, ", "))
}

// failShot keeps a screenshot of the page a test failed on.
func failShot(t testing.TB, ctx context.Context, what string) {
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(short, chromedp.FullScreenshot(100)); err == nil {
		name := "failed-" + regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(what), "-") + ".png"
		_ = os.WriteFile(filepath.Join(t.ArtifactDir(), name), png, 0o644)
		t.Logf("the page when %q failed: %s", what, filepath.Join(t.ArtifactDir(), name))
	}
}
