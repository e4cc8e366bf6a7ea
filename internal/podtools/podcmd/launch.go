package podcmd

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/podtools/launcher"
)

const launchLong = `The container entrypoint of a plain batch/v1 Job that trains with PaddlePaddle, no operator needed.

It waits until all pods of its Job (label job-name=$JOB_NAME) run with a pod IP, numbers them
by pod IP (sorted as addresses) to get this pod's trainer id, links or copies this trainer's data
($JOB_PATH/$JOB_NAME/<id>/data) to ./data, then starts a pserver and a trainer. Their output goes
to $JOB_PATH/$JOB_NAME/output/node_<id>/server.log and train.log and, prefixed, to this process's
output. It exits with the trainer's exit code. After a successful trainer the pserver keeps serving
the other pods' trainers until all have finished (up to --pserver-linger), then it is stopped.

--mode=fleet (default): for PaddlePaddle 2.x/3.x paddle.distributed.fleet programs in
parameter-server mode. The program after -- runs twice, as pserver and as trainer, with the
variables PaddleCloudRoleMaker reads (TRAINING_ROLE, PADDLE_PSERVERS_IP_PORT_LIST,
PADDLE_TRAINER_ENDPOINTS, PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ID, POD_IP, PADDLE_PORT, ...) and
PADDLE_OUTPUT_DIR=$JOB_PATH/$JOB_NAME/output; its arguments are passed unchanged. The pserver
listens on CONF_PADDLE_PORT (default 7164), the trainer on CONF_PADDLE_PORT + CONF_PADDLE_PORTS_NUM
(default 1) + CONF_PADDLE_PORTS_NUM_SPARSE (default 0).

--mode=legacy-flags: for PaddlePaddle v1 images only: runs 'paddle pserver' and 'paddle train'
with the v1 flags built from CONF_PADDLE_NIC, CONF_PADDLE_PORT, CONF_PADDLE_PORTS_NUM,
CONF_PADDLE_PORTS_NUM_SPARSE and CONF_PADDLE_GRADIENT_NUM; the arguments after -- are the trainer's.

With --progress-deadline, a trainer that prints nothing that long is taken as hung (Paddle's GEO
start-up barrier can lose one): the launchers of all pods stop their pserver and trainer, agree
through $JOB_PATH/$JOB_NAME/output/restarts/, and start both again, at most --max-restarts times.

Without CONF_PADDLE_PORT in a one-pod Job, or with --no-pserver, only the trainer runs (a single-node Job;
in fleet mode without a pserver list, so fleet trains locally). The pod's service account needs
config/launcher/rbac.yaml; KUBECONFIG, when set, is used instead. See docs/launcher.md.`

const launchExample = `  # a fleet parameter-server program, as pserver and trainer of every pod
  %[1]s -- python train.py --epochs=10

  # a single-node Job: one pod, the trainer alone
  %[1]s --no-pserver -- python train.py

  # the three-node tutorial's job.yaml on a PaddlePaddle v1 image
  %[1]s --mode=legacy-flags -- --config=trainer_config.py --trainer_count=4 --num_passes=10 --use_gpu=0`

// Launch is the launcher's command, as invoked by path: `paddlejob launch`
// in the CLI, `paddlejob-launch` as the in-pod binary. A launch that fails
// with a child's exit code returns a *launcher.ExitError for the program to
// exit with.
func Launch(path string) *cobra.Command {
	opts := launcher.DefaultOptions()
	dataMode := string(opts.DataMode)
	mode := string(opts.Mode)
	cmd := &cobra.Command{
		Use:     lastWord(path) + " [flags] [-- program and arguments...]",
		Short:   "Run the pserver and trainer of one pod of a plain batch/v1 Job (the three-node tutorial's start_paddle.py)",
		Long:    launchLong,
		Example: fmt.Sprintf(launchExample, path),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); (dash < 0 && len(args) > 0) || dash > 0 {
				return fmt.Errorf("unexpected argument %q: the program and its arguments go after --", args[0])
			}
			opts.ExtraArgs = args
			m, err := launcher.ParseMode(mode)
			if err != nil {
				return err
			}
			opts.Mode = m
			dm, err := launcher.ParseDataMode(dataMode)
			if err != nil {
				return err
			}
			opts.DataMode = dm
			signals := make(chan os.Signal, 2)
			signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(signals)
			opts.Signals = signals
			opts.Stdout, opts.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()

			return launcher.Run(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", mode, "fleet: PaddlePaddle 2.x/3.x fleet programs, peers in PADDLE_* variables; legacy-flags: PaddlePaddle v1's paddle pserver/train with v1 flags")
	f.IntVar(&opts.Parallelism, "parallelism", 0, "pods the Job runs (default $PADDLE_PARALLELISM, else the Job's .spec.parallelism)")
	f.StringVar(&opts.PServerCmd, "pserver-cmd", "", "pserver command line, split like a shell would (no shell runs); default: fleet: the trainer's, legacy-flags: '"+launcher.LegacyPServerCmd+"'")
	f.StringVar(&opts.TrainerCmd, "trainer-cmd", "", "trainer command line, split like a shell would (no shell runs); default: fleet: none, the program after -- runs, legacy-flags: '"+launcher.LegacyTrainerCmd+"'")
	f.BoolVar(&opts.NoPServer, "no-pserver", false, "run only the trainer, as trainer 0 (a single-node Job)")
	f.StringVar(&dataMode, "data-mode", dataMode, "how data and TRAIN_CONFIG_DIR reach the working directory: link or copy")
	f.StringVar(&opts.WorkDir, "workdir", opts.WorkDir, "working directory of the pserver and trainer; data goes to <workdir>/data")
	f.DurationVar(&opts.Timeout, "timeout", opts.Timeout, "how long to wait for all pods to run with an IP")
	f.DurationVar(&opts.PollInterval, "poll-interval", opts.PollInterval, "how often to look at the pods while waiting")
	f.DurationVar(&opts.GracePeriod, "grace-period", opts.GracePeriod, "time between SIGTERM and SIGKILL when stopping the pserver or trainer")
	f.DurationVar(&opts.TrainerDelay, "trainer-delay", 0, "wait this long after starting the pserver before starting the trainer")
	f.DurationVar(&opts.Linger, "pserver-linger", opts.Linger, "after the trainer succeeds, keep the pserver serving the other pods' trainers at most this long")
	f.DurationVar(&opts.ProgressDeadline, "progress-deadline", 0, "when a trainer prints nothing for this long (Paddle hung), restart the pserver and trainer of every pod together, agreeing through $JOB_PATH/$JOB_NAME/output/restarts; 0: never")
	f.IntVar(&opts.MaxRestarts, "max-restarts", opts.MaxRestarts, "how many times --progress-deadline may restart every pod's processes before the launch fails (exit code 124)")
	return cmd
}

// lastWord is a command's name in its path ("launch" of "paddlejob launch").
func lastWord(path string) string {
	words := strings.Fields(path)
	return words[len(words)-1]
}
