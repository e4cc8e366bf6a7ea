// Command benchscale measures how fast a PaddleJob controller turns many jobs,
// and big jobs, into pods against a real API server with no node, and
// compares it with one client creating the same number of pods directly.
//
// By default it starts etcd and kube-apiserver (envtest, with the PaddleJob
// CRD), builds and runs ./cmd/paddlejob-operator as a separate process, plays
// the kubelet by marking every new pod Running, and prints a markdown table:
//
//	go run ./hack/benchscale --jobs 1,100,1000 --pods 10,100,1000 --out bench.md
//
// The harness is generic: any controller (--operator-cmd) that creates the
// pods of PaddleJobs, labelled with --pod-selector-label, and sets
// .status.phase to Running once they all run can be measured.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

type config struct {
	kubeconfig     string
	fakeKubelet    string
	jobs, bigJobs  string
	ps, workers    int
	intranet       string
	image          string
	runs           int
	timeout        time.Duration
	out            string
	operatorCmd    string
	operatorArgs   string
	operatorQPS    float64
	operatorBurst  int
	podLabel       string
	clientQPS      float64
	clientBurst    int
	clientInflight int
	kubeletQPS     float64
	kubeletWorkers int
	settle         time.Duration
	countResources string
	skipDirect     bool
	keepWorkDir    bool
	verbose        bool
	directPods     string
	kubeletAfter   bool
	requestCosts   int
	// restartJobs and completeJobs > 0 run the phases after the --jobs
	// scenarios (phases.go).
	restartJobs, completeJobs int
	// progressJobs > 0 runs the progress scenario (progress.go).
	progressJobs                     int
	progressWarmup, progressDuration time.Duration
}

func bindFlags(fs *flag.FlagSet) *config {
	c := &config{}
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "run against this existing cluster (CRD installed) instead of starting etcd and kube-apiserver; needs --fake-kubelet")
	fs.StringVar(&c.fakeKubelet, "fake-kubelet", "auto", "mark new pods Running with an IP, as a kubelet would: true, false, or auto (true on the control plane the harness starts; must be given with --kubeconfig)")
	fs.StringVar(&c.jobs, "jobs", "1,100,1000", "comma-separated counts of concurrent jobs of --ps + --workers pods each, one scenario per count (empty: none)")
	fs.IntVar(&c.ps, "ps", 2, "parameter servers per job of the --jobs scenarios")
	fs.IntVar(&c.workers, "workers", 2, "workers per job of the --jobs scenarios")
	fs.StringVar(&c.bigJobs, "pods", "10,100,1000", "comma-separated worker counts of single collective jobs, one scenario per count (empty: none)")
	fs.StringVar(&c.intranet, "intranet", string(paddlev1.IntranetService), "spec.intranet of the jobs: Service (addresses known up front), PodIP or Host (wait for the pods' IPs, which the fake kubelet gives)")
	fs.StringVar(&c.image, "image", "registry.example.com/paddle/trainer:bench", "container image of the jobs and direct pods (never pulled: there is no node)")
	fs.IntVar(&c.runs, "runs", 1, "runs of each scenario; the report shows medians")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "limit of each scenario run, from the first create to every job Running; the harness fails past it")
	fs.StringVar(&c.out, "out", "", "also write the report to this file")
	fs.StringVar(&c.operatorCmd, "operator-cmd", "", "shell command running another controller instead of ./cmd/paddlejob-operator (KUBECONFIG is set for it; readiness is a first job reaching Running)")
	fs.StringVar(&c.operatorArgs, "operator-args", "", "extra arguments of ./cmd/paddlejob-operator, e.g. \"--max-concurrent-reconciles=32 --pod-create-parallelism=128\"")
	fs.Float64Var(&c.operatorQPS, "operator-qps", 500, "--kube-api-qps passed to ./cmd/paddlejob-operator (the default is the operator's own)")
	fs.IntVar(&c.operatorBurst, "operator-burst", 1000, "--kube-api-burst passed to ./cmd/paddlejob-operator (the default is the operator's own)")
	fs.StringVar(&c.podLabel, "pod-selector-label", paddlev1.LabelJobName, "label key every pod (and Service, ConfigMap) the controller creates carries; the harness watches pods with it")
	fs.Float64Var(&c.clientQPS, "client-qps", 500, "QPS of the client creating the jobs, and the direct reference's pods")
	fs.IntVar(&c.clientBurst, "client-burst", 500, "burst of that client")
	fs.IntVar(&c.clientInflight, "client-inflight", 50, "creates in flight at once from that client")
	fs.Float64Var(&c.kubeletQPS, "kubelet-qps", 1000, "QPS (and burst) of the fake kubelet's client")
	fs.IntVar(&c.kubeletWorkers, "kubelet-inflight", 50, "pod status writes in flight at once from the fake kubelet")
	fs.DurationVar(&c.settle, "settle", 3*time.Second, "wait for the operator's last writes when the API server's metrics cannot be read (otherwise the harness waits until it sends nothing for a second)")
	fs.StringVar(&c.countResources, "count-resources", "pods,services,configmaps,paddlejobs,events,podgroups", "resources whose requests are counted as the operator's (apiserver_request_total minus the harness's own); the API server's own background requests are on others")
	fs.BoolVar(&c.skipDirect, "skip-direct", false, "do not run the direct-creation reference")
	fs.StringVar(&c.directPods, "direct-pods", directPlain, "pods of the direct reference: plain (one container, nothing else) or copy (the specs and annotations of the pods the operator created in the same scenario, environment included)")
	fs.BoolVar(&c.keepWorkDir, "keep-workdir", false, "keep the work directory (operator binary, its log, the kubeconfig) even on success")
	fs.BoolVar(&c.kubeletAfter, "kubelet-after-created", false, "diagnostic: the fake kubelet starts a scenario's pods only once they all exist, so its status writes do not compete with the creates")
	fs.IntVar(&c.requestCosts, "request-costs", 400, "after the scenarios, send each kind of request they issue this many times alone and report the kube-apiserver's CPU per request (0: skip; only on the control plane the harness starts)")
	fs.IntVar(&c.progressJobs, "progress-jobs", 0, "after the scenarios, run this many jobs of one worker, each reporting its progress every second to the operator's endpoint (turned on with --progress-bind-address), and measure the status and history writes, the operator's CPU and the status's lag (0: skip)")
	fs.DurationVar(&c.progressWarmup, "progress-warmup", 30*time.Second, "reports before the progress scenario's measure starts")
	fs.DurationVar(&c.progressDuration, "progress-duration", 60*time.Second, "the progress scenario's measured window")
	fs.IntVar(&c.restartJobs, "restart-jobs", 0, "after each --jobs scenario's jobs all run, kill one pod of this many of them at once (exit code 137; the jobs' roles have restartPolicy ExitCode) and measure until each job runs again after its whole-job restart (0: skip)")
	fs.IntVar(&c.completeJobs, "complete-jobs", 0, "then mark every pod of this many of the jobs Succeeded at once and measure until each job is Completed (0: skip)")
	fs.BoolVar(&c.verbose, "v", false, "log each scenario's request counts: the API server's, the harness's own and the operator's")
	return c
}

// Kinds of pods of the direct reference.
const (
	directPlain = "plain"
	directCopy  = "copy"
)

// harness is the state shared by the scenarios.
type harness struct {
	cfg            *config
	c              *clients
	obs            *observer
	op             *operatorProc
	cpPIDs         map[string]int
	cpStarted      bool // the harness started the control plane
	metricsOK      bool
	countResources map[string]bool
	// samplePod is a worker pod the controller created, for the request costs.
	samplePod *corev1.Pod
}

func main() {
	// An own flag set: controller-runtime registers --kubeconfig on the
	// global one.
	fs := flag.NewFlagSet("benchscale", flag.ExitOnError)
	cfg := bindFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./hack/benchscale [flags]\n\nScale benchmark of the PaddleJob operator (see docs/benchmarks.md).\n\n")
		fs.PrintDefaults()
	}
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "benchscale: unexpected arguments %q\n", fs.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
}

// validate checks the flags and returns the scenarios and whether to fake
// the kubelet.
func validate(cfg *config) ([]scenario, bool, error) {
	jobCounts, err := parseCounts("jobs", cfg.jobs)
	if err != nil {
		return nil, false, err
	}
	bigJobs, err := parseCounts("pods", cfg.bigJobs)
	if err != nil {
		return nil, false, err
	}
	if len(jobCounts) > 0 && (cfg.workers < 1 || cfg.ps < 0) {
		return nil, false, fmt.Errorf("--workers must be at least 1 and --ps at least 0")
	}
	scenarios := buildScenarios(jobCounts, cfg.ps, cfg.workers, bigJobs)
	if len(scenarios) == 0 && cfg.progressJobs == 0 {
		return nil, false, fmt.Errorf("no scenario: --jobs and --pods are both empty")
	}
	if !slices.Contains(paddlev1.Intranets, paddlev1.Intranet(cfg.intranet)) {
		return nil, false, fmt.Errorf("--intranet %q: want %s", cfg.intranet, paddlev1.OneOf(paddlev1.Intranets))
	}
	fake, err := fakeKubeletWanted(cfg.fakeKubelet, cfg.kubeconfig != "")
	if err != nil {
		return nil, false, err
	}
	if cfg.directPods != directPlain && cfg.directPods != directCopy {
		return nil, false, fmt.Errorf("--direct-pods %q: want %s or %s", cfg.directPods, directPlain, directCopy)
	}
	if cfg.restartJobs < 0 || cfg.completeJobs < 0 {
		return nil, false, fmt.Errorf("--restart-jobs and --complete-jobs must be 0 (skip) or more")
	}
	if (cfg.restartJobs > 0 || cfg.completeJobs > 0) && !fake {
		return nil, false, fmt.Errorf("--restart-jobs and --complete-jobs write pod statuses as the fake kubelet: they need --fake-kubelet")
	}
	if cfg.runs < 1 || cfg.clientInflight < 1 || cfg.kubeletWorkers < 1 {
		return nil, false, fmt.Errorf("--runs, --client-inflight and --kubelet-inflight must be at least 1")
	}
	return scenarios, fake, nil
}

// run starts the cluster, the watches, the fake kubelet and the controller,
// runs the scenarios and prints the report.
func run(ctx context.Context, cfg *config) (err error) {
	scenarios, fake, err := validate(cfg)
	if err != nil {
		return err
	}
	workDir, err := os.MkdirTemp("", "benchscale-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil || cfg.keepWorkDir {
			logf("work directory kept: %s", workDir)
			return
		}
		_ = os.RemoveAll(workDir)
	}()
	rep := report{Date: time.Now(), Machine: readMachine(), Runs: cfg.runs}

	logf("starting the control plane...")
	cp, err := startControlPlane(cfg.kubeconfig, workDir)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := cp.stop(); stopErr != nil {
			warnf("%v", stopErr)
		}
	}()
	rep.ControlPlane = cp.Description
	h, err := newHarness(ctx, cfg, cp)
	if err != nil {
		return err
	}

	obsCtx, stopObs := context.WithCancel(ctx)
	defer stopObs()
	if h.obs, err = startObserver(obsCtx, h.c, cfg.podLabel, paddleJobs); err != nil {
		return err
	}
	if fake {
		k := newFakeKubelet(h.c.kubelet, h.obs.pods.GetIndexer(), cfg.kubeletWorkers)
		h.obs.onPod, h.obs.holdPods = k.observe, cfg.kubeletAfter
		k.run(obsCtx)
	}

	progressURL, err := withProgressEndpoint(cfg)
	if err != nil {
		return err
	}
	opCfg := operatorConfig{
		Cmd: cfg.operatorCmd, Args: cfg.operatorArgs, QPS: cfg.operatorQPS, Burst: cfg.operatorBurst,
		RepoRoot: testenv.RepoRoot(), WorkDir: workDir, Kubeconfig: cp.Kubeconfig,
		LogPath: filepath.Join(workDir, "operator.log"),
	}
	rep.Operator = describeOperator(opCfg)
	logf("starting the controller: %s", rep.Operator)
	if h.op, err = startOperator(ctx, opCfg); err != nil {
		return err
	}
	defer func() {
		if stopErr := h.op.stop(30 * time.Second); stopErr != nil {
			warnf("%v", stopErr)
		}
	}()
	prog, err := h.measure(ctx, scenarios, &rep, progressURL, fake)
	if err != nil {
		return fmt.Errorf("%w (operator log: %s)", err, opCfg.LogPath)
	}
	if err := printReport(rep, cfg.out); err != nil {
		return err
	}
	if err := printProgress(prog, cfg.out); err != nil {
		return err
	}
	if rep.Failure != "" {
		return fmt.Errorf("%s (operator log: %s)", rep.Failure, opCfg.LogPath)
	}
	return nil
}

// measure warms the controller up, then runs the scenarios, the progress
// scenario (when progressURL is set) and the request costs into rep.
func (h *harness) measure(ctx context.Context, scenarios []scenario, rep *report, progressURL string, fake bool) (*progressResult, error) {
	if err := h.waitForAFirstJob(ctx); err != nil {
		return nil, err
	}
	rep.Settings = describeHarness(h.cfg, fake)

	h.runSuite(ctx, scenarios, rep)
	var prog *progressResult
	if progressURL != "" && rep.Failure == "" {
		res, err := h.runProgress(ctx, progressURL)
		if err != nil {
			return nil, fmt.Errorf("the progress scenario: %w", err)
		}
		res.OperatorArgs, prog = h.cfg.operatorArgs, &res
	}
	if h.cfg.requestCosts > 0 && h.cpStarted && rep.Failure == "" {
		h.addRequestCosts(ctx, rep)
	}
	return prog, nil
}

// newHarness makes the harness's clients to the control plane cp, the
// resources it counts, and the control plane's process IDs when this
// command started it; it notes whether the API server's request counts can
// be read.
func newHarness(ctx context.Context, cfg *config, cp *controlPlane) (*harness, error) {
	h := &harness{cfg: cfg, countResources: map[string]bool{}}
	for _, r := range strings.Split(cfg.countResources, ",") {
		if r = strings.TrimSpace(r); r != "" {
			h.countResources[r] = true
		}
	}
	if h.cpStarted = cp.Started; cp.Started {
		h.cpPIDs = childPIDs(os.Getpid(), "kube-apiserver", "etcd")
	}
	var err error
	if h.c, err = newClients(cp.Config, clientSettings{
		CreatorQPS: float32(cfg.clientQPS), CreatorBurst: cfg.clientBurst, KubeletQPS: float32(cfg.kubeletQPS),
	}); err != nil {
		return nil, err
	}
	if _, err := scrapeRequestTotals(ctx, h.c.admin); err != nil {
		warnf("request counts unavailable: %v", err)
	} else {
		h.metricsOK = true
	}
	return h, nil
}

// waitForAFirstJob waits for the controller to be ready, then for it to
// run a warm-up job until Running, so that the scenarios measure a warm
// controller.
func (h *harness) waitForAFirstJob(ctx context.Context) error {
	readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err := h.op.waitReady(readyCtx)
	cancel()
	if err != nil {
		return err
	}
	logf("warming up: one job until Running...")
	if err := h.runWarmup(ctx, h.cfg.timeout); err != nil {
		return fmt.Errorf("the controller did not run a first job: %w", err)
	}
	return nil
}

// addRequestCosts stops the controller, so that it sends no request of its
// own, then measures what each kind of request costs the control plane
// into rep; a failed measure is a warning, not a failed report.
func (h *harness) addRequestCosts(ctx context.Context, rep *report) {
	if err := h.op.stop(30 * time.Second); err != nil {
		warnf("%v", err)
	}
	logf("request costs: each kind %d times...", h.cfg.requestCosts)
	rep.CostRequests = h.cfg.requestCosts
	var err error
	if rep.Costs, err = h.measureRequestCosts(ctx, h.cfg.requestCosts, h.samplePod); err != nil {
		warnf("request costs: %v", err)
	}
}

// printReport prints rep on stdout and, when outPath is set, writes the
// same text there.
func printReport(rep report, outPath string) error {
	var out strings.Builder
	formatReport(&out, rep)
	fmt.Print(out.String())
	if outPath != "" {
		if err := os.WriteFile(outPath, []byte(out.String()), 0o644); err != nil {
			return fmt.Errorf("writing --out: %w", err)
		}
	}
	return nil
}

// runSuite runs every scenario --runs times, each run followed by its direct
// reference, into rep; it stops at the first failure, noting it in rep.
func (h *harness) runSuite(ctx context.Context, scenarios []scenario, rep *report) {
	for _, s := range scenarios {
		rw := row{Scenario: s}
		for i := range h.cfg.runs {
			logf("%s (%d pods), run %d of %d...", s.Name, s.pods(), i+1, h.cfg.runs)
			if h.cfg.restartJobs > 0 && s.Jobs > 1 {
				s.RestartPolicy = paddlev1.RestartPolicyExitCode
			}
			res, err := h.runOperator(ctx, s, h.cfg.timeout)
			if sample := workerPod(res.templates); sample != nil {
				h.samplePod = sample
			}
			if err == nil && !h.cfg.skipDirect {
				err = h.runDirect(ctx, s, h.cfg.timeout, res.templates, &res)
				res.templates = nil
			}
			if err != nil {
				rep.Failure = err.Error()
				break
			}
			logf("  all pods created %.2fs (direct %.2fs), all Running %.2fs, operator CPU %.2fs",
				res.AllCreated.Seconds(), res.Direct.Seconds(), res.Running.Seconds(), res.CPU.Seconds())
			rw.Runs = append(rw.Runs, res)
		}
		if len(rw.Runs) > 0 {
			rep.Rows = append(rep.Rows, rw)
		}
		if rep.Failure != "" {
			return
		}
	}
}

// workerPod is a worker among the controller's pods, or nil.
func workerPod(pods []*corev1.Pod) *corev1.Pod {
	for _, p := range pods {
		if p.Labels[paddlev1.LabelReplicaType] == string(paddlev1.ReplicaWorker) {
			return p
		}
	}
	return nil
}

// fakeKubeletWanted resolves --fake-kubelet.
func fakeKubeletWanted(v string, existingCluster bool) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "auto":
		if existingCluster {
			return false, fmt.Errorf("--kubeconfig needs --fake-kubelet=true (no node runs the pods) or false (real kubelets do)")
		}
		return true, nil
	}
	return false, fmt.Errorf("--fake-kubelet %q: want true, false or auto", v)
}

func describeOperator(c operatorConfig) string {
	if c.Cmd != "" {
		return "`" + c.Cmd + "` (--operator-cmd)"
	}
	s := fmt.Sprintf("./cmd/paddlejob-operator built from the working tree, `--kube-api-qps=%g --kube-api-burst=%d", c.QPS, c.Burst)
	if c.Args != "" {
		s += " " + c.Args
	}
	return s + "`, other flags at their defaults, webhook and metrics off"
}

func describeHarness(c *config, fake bool) string {
	kubelet := "no fake kubelet"
	if fake {
		kubelet = fmt.Sprintf("fake kubelet marks each new pod Running with an IP (QPS %g, %d in flight)", c.kubeletQPS, c.kubeletWorkers)
		if c.kubeletAfter {
			kubelet = fmt.Sprintf("fake kubelet marks a scenario's pods Running with an IP once they all exist (--kubelet-after-created; QPS %g, %d in flight)", c.kubeletQPS, c.kubeletWorkers)
		}
	}
	direct := "plain one-container pods"
	if c.directPods == directCopy {
		direct = "pods copied from the operator's (same spec and annotations, --direct-pods=copy)"
	}
	return fmt.Sprintf("jobs (intranet %s) created from one client, QPS %g, burst %d, %d in flight, as are the direct reference's %s; %s; pods watched through a shared informer on label %s",
		c.intranet, c.clientQPS, c.clientBurst, c.clientInflight, direct, kubelet, c.podLabel)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func warnf(format string, args ...any) { logf("warning: "+format, args...) }
