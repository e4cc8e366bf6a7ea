package operator

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/controller"
	"github.com/paddlejob/paddlejob/internal/operator/kueue"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/operator/progress"
)

// Scheme knows the built-in types and PaddleJob.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(paddlev1.AddToScheme(Scheme))
}

// Options configure the operator.
type Options struct {
	Controller controller.Options

	MetricsAddr string
	// MetricsSecure serves the metrics over HTTPS to clients the API server
	// authenticates and authorizes (GET on the non-resource URL /metrics).
	MetricsSecure bool
	// MetricsAuthCache is how long the API server's decisions on a
	// scraper are trusted (metricsauth.go).
	MetricsAuthCache MetricsAuthCache
	ProbeAddr        string
	// PprofAddr serves Go's profiles, for measuring the operator.
	PprofAddr          string
	LeaderElection     bool
	LeaderElectionNS   string
	Namespaces         string
	QPS                float64
	Burst              int
	HostPortRange      string
	Zap                zap.Options
	GracefulShutdown   time.Duration
	LeaderElectionID   string
	SkipNameValidation bool
	Webhook            WebhookOptions
	Progress           ProgressOptions
}

// ProgressOptions configure the endpoint receiving the training programs'
// progress reports (docs/progress.md).
type ProgressOptions struct {
	// Addr is where the endpoint listens; "" or "0" turns the feature off.
	Addr string
	// URL is the endpoint's base URL as pods reach it; empty: the
	// paddlejob-progress Service of the operator's namespace, on Addr's port.
	URL string
	// StatusInterval is the least time between two copies of a job's
	// progress into its status.
	StatusInterval time.Duration
	// WritesPerSecond bounds the API server writes the reports of all jobs
	// cause together (progress.Options.WritesPerSecond).
	WritesPerSecond float64
	// MaxBytes bounds the memory the reports' store holds.
	MaxBytes int64
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{
		Controller:       controller.DefaultOptions(),
		MetricsAddr:      ":8080",
		MetricsSecure:    true,
		MetricsAuthCache: MetricsAuthCache{AllowTTL: DefaultMetricsAuthAllowTTL, DenyTTL: DefaultMetricsAuthDenyTTL},
		ProbeAddr:        ":8081",
		PprofAddr:        "0",
		QPS:              500,
		Burst:            1000,
		HostPortRange:    fmt.Sprintf("%d-%d", podcontract.DefaultHostPortMin, podcontract.DefaultHostPortMax),
		GracefulShutdown: 30 * time.Second,
		LeaderElectionID: "paddlejob-operator.batch.paddlepaddle.org",
		Webhook:          DefaultWebhookOptions(),
		Progress:         ProgressOptions{Addr: "0", StatusInterval: progress.DefaultStatusInterval, WritesPerSecond: progress.DefaultWritesPerSecond, MaxBytes: progress.DefaultMaxBytes},
		Zap:              zap.Options{Development: false, TimeEncoder: zapcore.ISO8601TimeEncoder},
	}
}

// BindFlags registers the options as command-line flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, "address the Prometheus metrics endpoint binds to; 0 disables it")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "serve the metrics over HTTPS, only to clients the API server authenticates and authorizes for GET /metrics (bind them to the ClusterRole paddlejob-metrics-reader); false serves plain HTTP to anyone who reaches the port")
	fs.DurationVar(&o.MetricsAuthCache.AllowTTL, "metrics-auth-allow-ttl", o.MetricsAuthCache.AllowTTL, "how long a scraper the API server authenticated and authorized may scrape again without another TokenReview and SubjectAccessReview (with --metrics-secure); 0: review every scrape")
	fs.DurationVar(&o.MetricsAuthCache.DenyTTL, "metrics-auth-deny-ttl", o.MetricsAuthCache.DenyTTL, "how long a token the API server refused, or a user it did not authorize, is refused without asking again (with --metrics-secure); 0: ask every time")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", o.ProbeAddr, "address the /healthz and /readyz probes bind to")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", o.PprofAddr, "address Go's profiles (/debug/pprof/) bind to, plain HTTP to anyone who reaches it; 0 disables them")
	fs.BoolVar(&o.LeaderElection, "leader-elect", o.LeaderElection, "elect a leader so that only one of several replicas reconciles")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", o.LeaderElectionNS, "namespace of the leader election lease (default: the pod's namespace)")
	fs.StringVar(&o.Namespaces, "namespace", o.Namespaces, "comma-separated namespaces to watch (default: all)")
	fs.Float64Var(&o.QPS, "kube-api-qps", o.QPS, "queries per second to the API server")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "burst of queries to the API server")
	fs.IntVar(&o.Controller.MaxConcurrentReconciles, "max-concurrent-reconciles", o.Controller.MaxConcurrentReconciles, "jobs reconciled at once")
	fs.IntVar(&o.Controller.PodCreateParallelism, "pod-create-parallelism", o.Controller.PodCreateParallelism, "pod creates and deletes in flight at once, across all jobs")
	fs.DurationVar(&o.Controller.PodEventBatchPeriod, "pod-event-batch-period", o.Controller.PodEventBatchPeriod, "how long pod events wait before they bring their job back, so that a burst of them is one pass and one status write")
	fs.StringVar(&o.Controller.InitImage, "init-image", o.Controller.InitImage, "image of the wait-for-endpoints init container (needs only sh)")
	fs.StringVar(&o.HostPortRange, "host-port-range", o.HostPortRange, "ports handed to pods of Host-intranet jobs, first-last")
	fs.DurationVar(&o.Controller.RestartBackoff, "restart-backoff", o.Controller.RestartBackoff, "wait before recreating a failed pod, doubling with each restart of the job")
	fs.DurationVar(&o.Controller.MaxRestartBackoff, "max-restart-backoff", o.Controller.MaxRestartBackoff, "longest wait before recreating a failed pod")
	fs.DurationVar(&o.Controller.FailureSettleWindow, "failure-settle-window", o.Controller.FailureSettleWindow, "how long after a job's first failure the failures of its other pods are judged with it, so that pods failing together get one decision whatever order they are seen in")
	fs.StringVar(&o.Controller.GangScheduler, "gang-scheduler", o.Controller.GangScheduler, "gang scheduler of jobs with a schedulingPolicy whose templates name none: volcano, scheduler-plugins or none")
	fs.StringVar(&o.Controller.SchedulerPluginsName, "scheduler-plugins-name", o.Controller.SchedulerPluginsName, "scheduler name of scheduler-plugins' coscheduling")
	fs.Func("elastic-etcd-endpoints", "comma-separated etcd endpoints (http://host:port) of elastic jobs that name none: their pods get PADDLE_MASTER=etcd://<the first>", func(v string) error {
		o.Controller.ElasticEtcdEndpoints = nil
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				o.Controller.ElasticEtcdEndpoints = append(o.Controller.ElasticEtcdEndpoints, e)
			}
		}
		return nil
	})
	fs.Func("kueue", "auto: queue PaddleJobs labelled kueue.x-k8s.io/queue-name through Kueue when the cluster serves its Workloads (found at start); off: ignore the label", func(v string) error {
		switch v {
		case "auto":
			o.Controller.IgnoreKueue = false
		case "off":
			o.Controller.IgnoreKueue = true
		default:
			return fmt.Errorf("want auto or off")
		}
		return nil
	})
	fs.DurationVar(&o.GracefulShutdown, "graceful-shutdown-timeout", o.GracefulShutdown, "how long running reconciles may take to finish on shutdown")
	o.Webhook.bindFlags(fs)
	fs.StringVar(&o.Progress.Addr, "progress-bind-address", o.Progress.Addr, "address the progress endpoint binds to, where training programs report their progress and metrics; 0 turns the feature off (no token or variables in pods, no status.progress)")
	fs.StringVar(&o.Progress.URL, "progress-url", o.Progress.URL, "the progress endpoint's base URL as pods reach it (default: http://paddlejob-progress.<operator namespace>.svc:<port of --progress-bind-address>)")
	fs.DurationVar(&o.Progress.StatusInterval, "progress-status-interval", o.Progress.StatusInterval, "least time between two copies of a job's reported progress into its status (a final report is copied at once)")
	fs.Float64Var(&o.Progress.WritesPerSecond, "progress-writes-per-second", o.Progress.WritesPerSecond, "API server writes per second the progress reports of all jobs may cause together: 80% for status copies, 20% for metric history ConfigMaps; past it, copies wait their turn, so with N jobs reporting each status follows within about N/(0.8 × this) seconds (final reports are never delayed)")
	fs.Int64Var(&o.Progress.MaxBytes, "progress-max-bytes", o.Progress.MaxBytes, "memory the held progress reports and metric curves may take, in bytes (docs/progress.md): over it, finished jobs go first, then the curves of the jobs that reported least recently are thinned, and reports of new jobs are refused")
	o.Zap.BindFlags(fs)
}

// The metrics endpoint asks the API server who a scraper is and whether it
// may read /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsServer serves the metrics: over HTTPS (a self-signed certificate)
// to authorized scrapers (metricsauth.go) when MetricsSecure, else plain
// HTTP.
func (o Options) metricsServer() metricsserver.Options {
	if !o.MetricsSecure {
		return metricsserver.Options{BindAddress: o.MetricsAddr}
	}
	return metricsserver.Options{BindAddress: o.MetricsAddr, SecureServing: true, FilterProvider: authorizedScrapers(o.MetricsAuthCache)}
}

// NewManager builds a manager running the PaddleJob controller.
func NewManager(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if err := o.complete(); err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
	podGroupKinds, err := controller.DiscoverPodGroupKinds(cfg)
	if err != nil {
		return nil, err
	}
	kueueServed, err := discoverKueue(cfg, o.Controller.IgnoreKueue)
	if err != nil {
		return nil, err
	}
	cacheOpts := o.cacheOptions(podGroupKinds, kueueServed)
	var store *progress.Store
	if on := o.Progress.Addr != "" && o.Progress.Addr != "0"; on {
		url, err := o.Progress.baseURL(o.Webhook.Namespace)
		if err != nil {
			return nil, err
		}
		store = progress.NewStore(progress.Options{StatusInterval: o.Progress.StatusInterval, WritesPerSecond: o.Progress.WritesPerSecond, MaxBytes: o.Progress.MaxBytes})
		o.Controller.Progress = controller.ProgressOptions{Store: store, URL: url}
	}
	webhookServer, certsReady, err := o.Webhook.webhookServer()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		WebhookServer: webhookServer,
		Scheme:        Scheme,
		Cache:         cacheOpts,
		// PodGroups are unstructured: read them from the cache too.
		Client:                  client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                 o.metricsServer(),
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNS,
		// Release the lease on shutdown so a standby takes over at once.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &o.GracefulShutdown,
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	controller.ReadJobGaugeFrom(mgr.GetCache())
	r := controller.NewReconciler(mgr.GetClient(), mgr.GetEventRecorder("paddlejob-operator"), o.Controller)
	if o.SkipNameValidation {
		r.SkipNameValidation = true
	}
	if err := setupKueue(mgr, r, kueueServed); err != nil {
		return nil, err
	}
	if err := r.SetupWithManager(ctx, mgr, podGroupKinds); err != nil {
		return nil, fmt.Errorf("setting up the PaddleJob controller: %w", err)
	}
	if store != nil {
		if err := setupProgress(mgr, cfg, store, o.Progress.Addr); err != nil {
			return nil, fmt.Errorf("setting up the progress endpoint: %w", err)
		}
	}
	if webhookServer != nil {
		if err := o.Webhook.setupWebhook(mgr, certsReady, r.Options); err != nil {
			return nil, fmt.Errorf("setting up the admission webhook: %w", err)
		}
	}
	if err := addHealthChecks(mgr, webhookServer, certsReady, o.Webhook.CertDir); err != nil {
		return nil, err
	}
	return mgr, nil
}

// complete checks the options a flag gives as text and fills in what they
// say.
func (o *Options) complete() error {
	if o.HostPortRange != "" {
		var lo, hi int32
		if _, err := fmt.Sscanf(o.HostPortRange, "%d-%d", &lo, &hi); err != nil || lo < 1 || hi > 65535 || hi < lo {
			return fmt.Errorf("--host-port-range %q: want first-last within 1-65535", o.HostPortRange)
		}
		o.Controller.HostPortMin, o.Controller.HostPortMax = lo, hi
	}
	switch o.Controller.GangScheduler {
	case controller.GangVolcano, controller.GangSchedulerPlugins, controller.GangNone:
	default:
		return fmt.Errorf("--gang-scheduler %q: want volcano, scheduler-plugins or none", o.Controller.GangScheduler)
	}
	return nil
}

// cacheOptions: what the manager's cache holds, in the namespaces it
// watches.
func (o *Options) cacheOptions(podGroupKinds map[string]bool, kueueServed bool) cache.Options {
	cacheOpts := controller.CacheOptions(podGroupKinds)
	if kueueServed {
		kueue.CacheWorkloads(&cacheOpts, controller.OwnedObjects())
	}
	if o.Namespaces != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range strings.Split(o.Namespaces, ",") {
			if ns = strings.TrimSpace(ns); ns != "" {
				cacheOpts.DefaultNamespaces[ns] = cache.Config{}
			}
		}
	}
	return cacheOpts
}

// addHealthChecks: healthy once running; ready once the webhook serves
// admission requests, which the API server makes only once it trusts the
// certificate: a self-issued one (certsReady not nil) must be in the cert
// dir and its CA in the webhook configurations first.
func addHealthChecks(mgr ctrl.Manager, webhookServer webhook.Server, certsReady <-chan struct{}, certDir string) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	ready := healthz.Ping
	if webhookServer != nil {
		ready = webhookServer.StartedChecker()
	}
	if err := mgr.AddReadyzCheck("readyz", ready); err != nil {
		return err
	}
	if certsReady != nil {
		return mgr.AddReadyzCheck("webhook-certificate", certsInPlace(certsReady, certDir))
	}
	return nil
}

// discoverKueue reports whether the Kueue integration is on and the
// cluster serves Kueue's Workloads.
func discoverKueue(cfg *rest.Config, ignore bool) (bool, error) {
	if ignore {
		return false, nil
	}
	return kueue.Discover(cfg)
}

// setupKueue registers the Kueue controller beside the PaddleJob
// controller, which holds the jobs Kueue has not admitted (its Queue). With
// --kueue=off there is neither; on a cluster without Kueue's Workloads
// there is no controller, and the Queue says what is missing.
func setupKueue(mgr ctrl.Manager, r *controller.PaddleJobReconciler, served bool) error {
	if r.Options.IgnoreKueue {
		return nil
	}
	r.Queue = kueue.Queue{Reader: mgr.GetClient(), Served: served}
	if !served {
		return nil
	}
	kr := kueue.NewReconciler(mgr.GetClient(), mgr.GetEventRecorder("paddlejob-operator"))
	opts := ctrlcontroller.Options{MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles, SkipNameValidation: &r.SkipNameValidation}
	if err := kr.SetupWithManager(mgr, opts); err != nil {
		return fmt.Errorf("setting up the Kueue controller: %w", err)
	}
	return nil
}

// Run starts the operator against the cluster of the default kubeconfig and
// blocks until ctx is done.
func Run(ctx context.Context, o Options) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.Zap)))
	setMemoryLimit(ctrl.Log.WithName("setup"))
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := NewManager(ctx, cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}
