package launcher

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Options are the flags of `paddlejob launch`.
type Options struct {
	Mode         Mode          // fleet (default) or legacy-flags
	Parallelism  int           // expected pods; 0: PADDLE_PARALLELISM, else the Job's
	PServerCmd   string        // shell-like command line of the pserver; "": see resolveCommands
	TrainerCmd   string        // shell-like command line of the trainer; "": see resolveCommands
	NoPServer    bool          // run only the trainer (a single-node Job)
	DataMode     DataMode      // how data and config reach WorkDir
	WorkDir      string        // the children's working directory
	Timeout      time.Duration // how long to wait for the peers
	PollInterval time.Duration // between looks at the peers
	GracePeriod  time.Duration // between SIGTERM and SIGKILL of a child
	TrainerDelay time.Duration // between starting the pserver and the trainer
	Linger       time.Duration // how long a pserver may serve others after its trainer succeeded
	// ProgressDeadline, when not 0, is how long a trainer may print nothing
	// before every pod's pserver and trainer restart (grouprestart.go), at
	// most MaxRestarts times.
	ProgressDeadline time.Duration
	MaxRestarts      int
	// ExtraArgs are the arguments after `--`: in fleet mode the program
	// (or, with --trainer-cmd, its arguments) for both roles; in
	// legacy-flags mode the trainer's extra v1 flags.
	ExtraArgs []string

	Getenv  func(string) string // os.Getenv when nil
	Stdout  io.Writer           // children's prefixed stdout
	Stderr  io.Writer           // children's prefixed stderr and the launcher's messages
	Signals <-chan os.Signal    // SIGINT/SIGTERM to pass on to the children

	// Seams for tests; production leaves them nil.
	cluster        Cluster
	interfaceAddrs func() ([]netip.Addr, error)
	namespaceFile  string
}

// DefaultOptions are the flag defaults.
func DefaultOptions() Options {
	return Options{
		Mode:         ModeFleet,
		DataMode:     DataLink,
		WorkDir:      ".",
		Timeout:      10 * time.Minute,
		PollInterval: time.Second,
		GracePeriod:  10 * time.Second,
		Linger:       5 * time.Minute,
		MaxRestarts:  3,
	}
}

// Run is `paddlejob launch`: it returns nil when the trainer exits 0, an
// *ExitError carrying the code to exit with when a child fails, and an
// ordinary error when the launch itself fails.
func Run(ctx context.Context, opts Options) error {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if err := opts.validate(); err != nil {
		return err
	}
	cmds, err := resolveCommands(opts.Mode, opts.PServerCmd, opts.TrainerCmd, opts.ExtraArgs)
	if err != nil {
		return err
	}
	workdir, err := filepath.Abs(opts.WorkDir)
	if err != nil {
		return fmt.Errorf("--workdir=%s: %w", opts.WorkDir, err)
	}
	opts.WorkDir = workdir
	env := ReadEnv(opts.Getenv)
	override, err := expectedOverride(opts.Parallelism, env)
	if err != nil {
		return err
	}

	alone, expected, err := runsAlone(ctx, &opts, env, override)
	if err != nil {
		return err
	}
	if alone {
		return runAlone(ctx, opts, env, cmds)
	}
	return runWithPServer(ctx, opts, env, cmds, expected)
}

func (o *Options) validate() error {
	if o.Mode == "" {
		o.Mode = ModeFleet
	}
	if _, err := ParseMode(string(o.Mode)); err != nil {
		return err
	}
	for _, d := range []struct {
		flag     string
		value    time.Duration
		positive bool
	}{
		{"timeout", o.Timeout, true},
		{"poll-interval", o.PollInterval, true},
		{"grace-period", o.GracePeriod, false},
		{"trainer-delay", o.TrainerDelay, false},
		{"pserver-linger", o.Linger, false},
		{"progress-deadline", o.ProgressDeadline, false},
	} {
		if d.value < 0 || (d.positive && d.value == 0) {
			return fmt.Errorf("--%s=%s: want a positive duration", d.flag, d.value)
		}
	}
	if o.MaxRestarts < 0 {
		return fmt.Errorf("--max-restarts=%d: want 0 or more", o.MaxRestarts)
	}
	return nil
}

// expectedOverride is --parallelism, else PADDLE_PARALLELISM, else 0.
func expectedOverride(flagValue int, env Env) (int, error) {
	if flagValue < 0 {
		return 0, fmt.Errorf("--parallelism=%d: want a positive number", flagValue)
	}
	if flagValue > 0 {
		return flagValue, nil
	}
	return env.ParallelismOverride()
}

// runsAlone decides between the single-node tutorial's single trainer and the three-node tutorial's pserver
// and trainer: alone with --no-pserver, or without CONF_PADDLE_PORT when the
// job has one pod (or no JOB_NAME to ask about). A bigger job without
// CONF_PADDLE_PORT runs pservers on DefaultPort in fleet mode and is an
// error in legacy-flags mode. expected is the override, or the Job's
// parallelism when the decision needed it, else 0.
func runsAlone(ctx context.Context, opts *Options, env Env, override int) (alone bool, expected int, err error) {
	switch {
	case opts.NoPServer:
		return true, override, nil
	case env.Port != "":
		return false, override, nil
	case env.JobName == "":
		return true, override, nil
	}
	expected = override
	if expected == 0 {
		c, err := opts.clusterClient(env)
		if err != nil {
			return false, 0, err
		}
		ns := jobNamespace(env.Namespace, opts.namespaceFileOrDefault())
		if expected, err = expectedPods(ctx, c, ns, env.JobName, 0, 0, opts.Stderr); err != nil {
			return false, 0, err
		}
	}
	switch {
	case expected == 1:
		return true, expected, nil
	case opts.Mode != ModeLegacyFlags:
		return false, expected, nil
	}
	return false, 0, fmt.Errorf("invalid environment: CONF_PADDLE_PORT is not set but job %s runs %d pods; set the CONF_PADDLE_* variables, or pass --no-pserver to run only the trainer", env.JobName, expected)
}

// runAlone runs the trainer only, as trainer 0.
func runAlone(ctx context.Context, opts Options, env Env, cmds commands) error {
	hasJobDir := env.JobPath != "" && env.JobName != ""
	var trainer roleSpec
	if opts.Mode == ModeLegacyFlags {
		args, err := singleTrainerArgs(env, opts.ExtraArgs)
		if err != nil {
			return err
		}
		trainer = roleSpec{argv: slices.Concat(cmds.trainer, args), env: childEnv(0, 1, netip.Addr{})}
	} else {
		var id, out string
		if env.JobName != "" {
			id = jobID(jobNamespace(env.Namespace, opts.namespaceFileOrDefault()), env.JobName)
		}
		if hasJobDir {
			out = outputDir(env.JobPath, env.JobName)
		}
		trainer = roleSpec{argv: cmds.trainer, env: fleetChildEnv(fleetAloneEnv(id, out))}
	}
	logDir := opts.WorkDir
	if hasJobDir {
		jobDir := filepath.Join(env.JobPath, env.JobName)
		if err := stageInputs(opts, env, jobDir, 0); err != nil {
			return err
		}
		logDir = nodeLogDir(env.JobPath, env.JobName, 0)
	}
	return runProcesses(ctx, opts, runSpec{trainer: trainer, logDir: logDir})
}

// runWithPServer finds the peers, then runs the pserver and the trainer.
// override is the expected pod count when known already, else 0.
func runWithPServer(ctx context.Context, opts Options, env Env, cmds commands, override int) error {
	var (
		legacy           ClusterConfig
		fleet            FleetConfig
		jobName, jobPath string
		gradientNum      int // 0: not set (fleet mode only)
		err              error
		legacyMode       = opts.Mode == ModeLegacyFlags
	)
	if legacyMode {
		legacy, err = env.ClusterConfig()
		jobName, jobPath, gradientNum = legacy.JobName, legacy.JobPath, legacy.GradientNum
	} else {
		fleet, err = env.FleetConfig()
		jobName, jobPath, gradientNum = fleet.JobName, fleet.JobPath, fleet.GradientNum
	}
	if err != nil {
		return err
	}
	if !legacyMode {
		if err := checkParameterServerRuntime(ctx, cmds.pserver, opts.WorkDir, os.Environ(), opts.Stderr); err != nil {
			return err
		}
	}
	p, err := findPeers(ctx, &opts, env, jobName, override, gradientNum)
	if err != nil {
		return err
	}

	nodeDir := nodeLogDir(jobPath, jobName, p.id)
	run := runSpec{
		logDir:     nodeDir,
		othersDone: func() bool { return allTrainersEnded(outputDir(jobPath, jobName), len(p.order)) },
		trainerEnded: func(code int) {
			if err := recordTrainerExit(nodeDir, code); err != nil {
				fmt.Fprintf(opts.Stderr, "paddlejob launch: warning: other pods will not see that this trainer ended: %v\n", err)
			}
		},
	}
	if legacyMode {
		fmt.Fprintf(opts.Stderr, "paddlejob launch: trainer id %d of %d (pod IP %s; pservers %s)\n", p.id, len(p.order), p.self, joinAddrs(p.order))
		targs, err := trainerArgs(legacy, p.order, p.id, opts.ExtraArgs)
		if err != nil {
			return err
		}
		vars := childEnv(p.id, len(p.order), p.self)
		run.pserver = &roleSpec{argv: slices.Concat(cmds.pserver, pserverArgs(legacy, p.order)), env: vars}
		run.trainer = roleSpec{argv: slices.Concat(cmds.trainer, targs), env: vars}
	} else {
		job := fleetJob{
			jobID:       jobID(p.namespace, jobName),
			outputDir:   outputDir(jobPath, jobName),
			pods:        p.order,
			pserverPort: fleet.PServerPort,
			trainerPort: fleet.TrainerPort,
		}
		fmt.Fprintf(opts.Stderr, "paddlejob launch: trainer id %d of %d (pod IP %s); pservers %s; trainers %s\n",
			p.id, len(p.order), p.self, endpoints(p.order, job.pserverPort), endpoints(p.order, job.trainerPort))
		run.pserver = &roleSpec{argv: cmds.pserver, env: fleetChildEnv(job.env(rolePServer, p.id))}
		run.trainer = roleSpec{argv: cmds.trainer, env: fleetChildEnv(job.env(roleTrainer, p.id))}
		run.servers = addrPorts(p.order, job.pserverPort)
	}

	if opts.ProgressDeadline > 0 {
		run.restarts = &groupRestart{
			dir: filepath.Join(outputDir(jobPath, jobName), "restarts", p.run), output: outputDir(jobPath, jobName),
			id: p.id, nodes: len(p.order), deadline: opts.ProgressDeadline, max: opts.MaxRestarts, wait: opts.Timeout,
		}
	}
	if err := stageInputs(opts, env, filepath.Join(jobPath, jobName), p.id); err != nil {
		return err
	}
	if err := clearTrainerExit(nodeDir); err != nil {
		return err
	}
	return runProcesses(ctx, opts, run)
}

// peers is what discovery found out about the job.
type peers struct {
	namespace string
	order     []netip.Addr // the pods' addresses in trainer-id order
	self      netip.Addr
	id        int    // this pod's trainer id: its index in order
	run       string // names this set of pods (runName)
}

// findPeers counts the job's pods, waits until all run with an IP, orders
// them and finds this pod among them. override is the expected count when
// known, else 0; gradientNum, when not 0, must equal the count (one trainer
// per pod) and is the count when RBAC forbids reading the Job.
func findPeers(ctx context.Context, opts *Options, env Env, jobName string, override, gradientNum int) (peers, error) {
	selfIP, err := env.PodAddr()
	if err != nil {
		return peers{}, err
	}
	c, err := opts.clusterClient(env)
	if err != nil {
		return peers{}, err
	}
	ns := jobNamespace(env.Namespace, opts.namespaceFileOrDefault())
	expected, err := expectedPods(ctx, c, ns, jobName, override, gradientNum, opts.Stderr)
	if err != nil {
		return peers{}, err
	}
	if gradientNum != 0 && expected != gradientNum {
		return peers{}, fmt.Errorf("invalid environment: CONF_PADDLE_GRADIENT_NUM=%d but job %s/%s runs %d pods (one trainer each)", gradientNum, ns, jobName, expected)
	}
	fmt.Fprintf(opts.Stderr, "paddlejob launch: waiting for %d pods of job %s/%s to run with an IP (timeout %s)\n", expected, ns, jobName, opts.Timeout)
	pods, err := waitForPeers(ctx, c, ns, jobName, expected, opts.PollInterval, opts.Timeout, opts.Stderr)
	if err != nil {
		return peers{}, err
	}
	order, err := trainerOrder(pods)
	if err != nil {
		return peers{}, err
	}
	if !selfIP.IsValid() {
		if selfIP, err = opts.findSelf(env, pods); err != nil {
			return peers{}, err
		}
	}
	id, err := trainerID(order, selfIP)
	if err != nil {
		return peers{}, err
	}
	return peers{namespace: ns, order: order, self: selfIP.Unmap(), id: id, run: runName(pods)}, nil
}

// nodeLogDir is $JOB_PATH/$JOB_NAME/output/node_<id>, the three-node tutorial's log place.
func nodeLogDir(jobPath, jobName string, id int) string {
	return filepath.Join(outputDir(jobPath, jobName), "node_"+strconv.Itoa(id))
}

// stageInputs puts the training config (when TRAIN_CONFIG_DIR is set) and
// this trainer's data into the working directory.
func stageInputs(opts Options, env Env, jobDir string, id int) error {
	if env.TrainConfigDir != "" {
		if err := stageConfig(jobDir, env.TrainConfigDir, opts.WorkDir, opts.DataMode, opts.Stderr); err != nil {
			return err
		}
	}
	return stageData(jobDir, id, opts.WorkDir, opts.DataMode, opts.Stderr)
}

// childEnv is the children's environment in legacy-flags mode: the
// launcher's, plus the paddle.job SDK's TRAINER_ID and TRAINERS for trainers that read
// their rank from the environment, and POD_IP as found, for a pserver that
// must know which --pservers entry it is.
func childEnv(id, trainers int, self netip.Addr) []string {
	env := append(os.Environ(), "TRAINER_ID="+strconv.Itoa(id), "TRAINERS="+strconv.Itoa(trainers))
	if self.IsValid() {
		env = append(env, "POD_IP="+self.String())
	}
	return env
}

// roleSpec is one process to run: its complete command line and
// environment.
type roleSpec struct {
	argv []string
	env  []string
}

// runSpec is what runProcesses runs.
type runSpec struct {
	pserver      *roleSpec // nil: the trainer runs alone
	trainer      roleSpec
	servers      []netip.AddrPort // every pserver of the job
	logDir       string
	othersDone   func() bool
	trainerEnded func(code int)
	restarts     *groupRestart // nil: no group restarts
}

// runProcesses runs the trainer, after the pserver when there is one, with
// their logs in the log directory.
func runProcesses(ctx context.Context, opts Options, run runSpec) error {
	if err := os.MkdirAll(run.logDir, 0o755); err != nil {
		return fmt.Errorf("creating the log directory: %w", err)
	}
	stdout, stderr := &syncWriter{w: opts.Stdout}, &syncWriter{w: opts.Stderr}
	spec := func(role string, r roleSpec, logName string) processSpec {
		return processSpec{
			role:    role,
			argv:    r.argv,
			dir:     opts.WorkDir,
			env:     r.env,
			logPath: filepath.Join(run.logDir, logName),
			output:  stdout,
		}
	}
	s := &supervisor{
		trainer:      spec("trainer", run.trainer, "train.log"),
		trainerDelay: opts.TrainerDelay,
		servers:      run.servers,
		grace:        opts.GracePeriod,
		signals:      opts.Signals,
		log:          stderr,
		linger:       opts.Linger,
		pollInterval: opts.PollInterval,
		othersDone:   run.othersDone,
		trainerEnded: run.trainerEnded,
		restarts:     run.restarts,
	}
	if run.pserver != nil {
		ps := spec("pserver", *run.pserver, "server.log")
		s.pserver = &ps
		fmt.Fprintf(stderr, "paddlejob launch: pserver: %q\n", ps.argv)
	}
	fmt.Fprintf(stderr, "paddlejob launch: trainer: %q\n", s.trainer.argv)
	fmt.Fprintf(stderr, "paddlejob launch: logs in %s\n", run.logDir)
	return s.run(ctx)
}

func (o *Options) clusterClient(env Env) (Cluster, error) {
	if o.cluster != nil {
		return o.cluster, nil
	}
	cfg, err := RESTConfig(env.Kubeconfig)
	if err != nil {
		return nil, err
	}
	if o.cluster, err = NewCluster(cfg); err != nil {
		return nil, err
	}
	return o.cluster, nil
}

func (o *Options) namespaceFileOrDefault() string {
	if o.namespaceFile != "" {
		return o.namespaceFile
	}
	return serviceAccountNamespaceFile
}

func (o *Options) findSelf(env Env, peers []corev1.Pod) (netip.Addr, error) {
	listAddrs := o.interfaceAddrs
	if listAddrs == nil {
		listAddrs = localAddrs
	}
	addrs, err := listAddrs()
	if err != nil {
		return netip.Addr{}, err
	}
	hostname := env.Hostname
	if hostname == "" {
		hostname, _ = os.Hostname()
	}
	return selfAddress(hostname, peers, addrs)
}
