package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/progress"
)

// The progress scenario (--progress-jobs): that many Running jobs of one
// worker each, every worker reporting its progress every second through
// the operator's endpoint, as the Python SDK would (a token bound to the
// pod). After --progress-warmup, it measures over --progress-duration the
// status and history writes the reports cost, the operator's CPU, and how
// far each job's status is behind its latest report.

// progressResult is what the progress scenario measured.
type progressResult struct {
	Jobs                  int
	Window                time.Duration
	Reports, Refused      int64
	StatusWrites          float64 // PaddleJob status writes a second
	HistoryWrites         float64 // ConfigMap writes a second
	OperatorCPU           float64 // cores
	APIServerCPU, EtcdCPU float64 // cores
	// LagMedian and LagMax are how many reports (seconds) the jobs' status
	// was behind the latest one, at the window's end.
	LagMedian, LagMax int64
	OperatorArgs      string
}

// withProgressEndpoint adds to the operator's arguments the flags turning
// its progress endpoint on, on a free loopback port, when the progress
// scenario runs; it returns the URL the harness reports to.
func withProgressEndpoint(cfg *config) (url string, err error) {
	if cfg.progressJobs == 0 {
		return "", nil
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cfg.operatorArgs = strings.TrimSpace(fmt.Sprintf("%s --progress-bind-address=%s --progress-url=http://%s", cfg.operatorArgs, addr, addr))
	return "http://" + addr, nil
}

// runProgress runs the progress scenario against the operator whose
// endpoint is at url.
func (h *harness) runProgress(ctx context.Context, url string) (progressResult, error) {
	n := h.cfg.progressJobs
	res := progressResult{Jobs: n, Window: h.cfg.progressDuration}
	ns, err := h.createNamespace(ctx, "benchscale-progress-")
	if err != nil {
		return res, err
	}
	defer func() {
		if err := h.cleanup(ctx, ns); err != nil {
			warnf("cleaning up namespace %s: %v", ns, err)
		}
	}()
	// No controller-manager makes the namespace's default account.
	if _, err := h.c.admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		return res, err
	}
	t := h.obs.track(ns, n, n)
	defer h.obs.untrack(ns)
	logf("progress: %d jobs of one worker...", n)
	if err := h.parallel(ctx, n, func(i int) error { return h.createReportingJob(ctx, ns, i) }); err != nil {
		return res, err
	}
	if err := h.await(ctx, t.allRunning); err != nil {
		return res, fmt.Errorf("progress: waiting for the jobs to run: %w; missing: %s", err, t.missing())
	}
	tokens, err := h.podTokens(ctx, ns, h.obs.podsOf(ns))
	if err != nil {
		return res, err
	}
	logf("progress: %d workers report every second; measuring from %s for %s...", n, h.cfg.progressWarmup, h.cfg.progressDuration)
	r := &reporter{url: url, ns: ns, tokens: tokens, client: &http.Client{
		Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 200},
	}}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go r.run(rctx, h)
	select {
	case <-time.After(h.cfg.progressWarmup):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	before, err := h.snapshot(ctx, false)
	if err != nil {
		return res, err
	}
	reportsBefore, refusedBefore := r.sent.Load(), r.refused.Load()
	select {
	case <-time.After(h.cfg.progressDuration):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	after, err := h.snapshot(ctx, false)
	if err != nil {
		return res, err
	}
	res.Reports, res.Refused = r.sent.Load()-reportsBefore, r.refused.Load()-refusedBefore
	res.LagMedian, res.LagMax, err = h.statusLag(ctx, ns, r.step.Load())
	stop()
	h.fillProgress(&res, before, after)
	return res, err
}

// createReportingJob creates job i of one worker.
func (h *harness) createReportingJob(ctx context.Context, ns string, i int) error {
	obj, err := jobObject(fmt.Sprintf("job-%04d", i), ns, scenario{Jobs: 1, Workers: 1}, h.cfg.intranet, h.cfg.image)
	if err != nil {
		return err
	}
	_, err = h.c.creatorDyn.Resource(paddleJobs).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

// podTokens requests a progress token bound to each worker pod, by job.
func (h *harness) podTokens(ctx context.Context, ns string, pods []*corev1.Pod) (map[string]string, error) {
	var mu sync.Mutex
	tokens := map[string]string{}
	err := h.parallel(ctx, len(pods), func(i int) error {
		pod := pods[i]
		tr, err := h.c.admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences: []string{progress.Audience}, ExpirationSeconds: ptr.To[int64](3600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("a token for pod %s: %w", pod.Name, err)
		}
		mu.Lock()
		tokens[pod.Labels[paddlev1.LabelJobName]] = tr.Status.Token
		mu.Unlock()
		return nil
	})
	return tokens, err
}

// reporter posts every job's report once a second: step k at the k-th
// second, the same for all jobs.
type reporter struct {
	url, ns       string
	tokens        map[string]string
	client        *http.Client
	step          atomic.Int64
	sent, refused atomic.Int64
}

func (r *reporter) run(ctx context.Context, h *harness) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	jobs := make([]string, 0, len(r.tokens))
	for j := range r.tokens {
		jobs = append(jobs, j)
	}
	slices.Sort(jobs)
	for {
		step := r.step.Add(1)
		// A second's reports, spread by the pool's width; a round that
		// outlasts its second delays the next.
		_ = h.parallel(ctx, len(jobs), func(i int) error {
			r.post(ctx, jobs[i], step)
			return nil
		})
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (r *reporter) post(ctx context.Context, job string, step int64) {
	body, _ := json.Marshal(map[string]any{"percent": float64(step%100) / 2, "step": step, "metrics": map[string]float64{"loss": 1 / float64(step)}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url+progress.ReportPath(r.ns, job), bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+r.tokens[job])
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			r.refused.Add(1)
		}
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted {
		r.sent.Add(1)
	} else {
		r.refused.Add(1)
	}
}

// statusLag is how many steps each job's status is behind step, the
// latest reported: the median and the largest.
func (h *harness) statusLag(ctx context.Context, ns string, step int64) (median, largest int64, err error) {
	list, err := h.c.adminDyn.Resource(paddleJobs).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	var lags []int64
	for _, item := range list.Items {
		var job paddlev1.PaddleJob
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &job); err != nil {
			return 0, 0, err
		}
		lag := step // no progress in the status yet
		if p := job.Status.Progress; p != nil && p.Step != nil {
			lag = step - *p.Step
		}
		lags = append(lags, lag)
	}
	if len(lags) == 0 {
		return 0, 0, fmt.Errorf("no job in %s", ns)
	}
	slices.Sort(lags)
	return lags[len(lags)/2], lags[len(lags)-1], nil
}

// fillProgress computes the rates of res from the snapshots around the
// window.
func (h *harness) fillProgress(res *progressResult, before, after snapshot) {
	secs := res.Window.Seconds()
	ops := h.operatorRequests(before, after)
	for k, v := range ops {
		switch {
		case !isWrite(k.Verb):
		case k.Resource == "paddlejobs" && k.Subresource == "status":
			res.StatusWrites += v / secs
		case k.Resource == "configmaps":
			res.HistoryWrites += v / secs
		}
	}
	res.OperatorCPU = (after.usage.CPU - before.usage.CPU).Seconds() / secs
	cpu := cpuSince(before.cp, after.cp)
	res.APIServerCPU, res.EtcdCPU = cpu["kube-apiserver"].Seconds()/secs, cpu["etcd"].Seconds()/secs
}

// formatProgress writes res as a markdown table.
func formatProgress(w io.Writer, res progressResult) {
	fmt.Fprintf(w, "\n### Progress reports\n\n%d Running jobs of one worker, each reporting every second; measured over %s after %s of reports. Operator: `%s`.\n\n",
		res.Jobs, res.Window, "the warm-up", res.OperatorArgs)
	fmt.Fprintln(w, "| reports accepted /s | refused | status writes /s | history writes /s | operator CPU (cores) | kube-apiserver CPU | etcd CPU | status behind the latest report: median / max (s) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	fmt.Fprintf(w, "| %.0f | %d | %.1f | %.1f | %.2f | %.2f | %.2f | %d / %d |\n",
		float64(res.Reports)/res.Window.Seconds(), res.Refused, res.StatusWrites, res.HistoryWrites,
		res.OperatorCPU, res.APIServerCPU, res.EtcdCPU, res.LagMedian, res.LagMax)
}

// printProgress prints res, when the scenario ran, and appends it to
// --out.
func printProgress(res *progressResult, outPath string) error {
	if res == nil {
		return nil
	}
	var b strings.Builder
	formatProgress(&b, *res)
	fmt.Print(b.String())
	if outPath == "" {
		return nil
	}
	f, err := os.OpenFile(outPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(b.String())
	return err
}
