package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/paddlejob/paddlejob/internal/launcher"
)

func init() { register(newLaunchCmd) }

func newLaunchCmd() *cobra.Command {
	opts := launcher.DefaultOptions()
	dataMode := string(opts.DataMode)
	cmd := &cobra.Command{
		Use:   "launch [flags] [-- trainer arguments...]",
		Short: "Run the pserver and trainer of one pod of a plain batch/v1 Job (seed 001's start_paddle.py)",
		Long: `The container entrypoint of a plain batch/v1 Job that trains with PaddlePaddle, no operator needed.

It waits until all pods of its Job (label job-name=$JOB_NAME) run with a pod IP, numbers them
by pod IP (sorted as addresses) to get this pod's trainer id, links or copies this trainer's data
($JOB_PATH/$JOB_NAME/<id>/data) to ./data, then starts the pserver and the trainer with the legacy
flags built from JOB_NAME, JOB_PATH, CONF_PADDLE_NIC, CONF_PADDLE_PORT, CONF_PADDLE_PORTS_NUM,
CONF_PADDLE_PORTS_NUM_SPARSE and CONF_PADDLE_GRADIENT_NUM. Their output goes to
$JOB_PATH/$JOB_NAME/output/node_<id>/server.log and train.log and, prefixed, to this process's
output. It exits with the trainer's exit code. After a successful trainer the pserver keeps serving
the other pods' trainers until all have finished (up to --pserver-linger).

Arguments after -- go to the trainer. Without CONF_PADDLE_PORT in a one-pod Job, or with
--no-pserver, only the trainer runs (seed 000). The pod's service account needs
config/launcher/rbac.yaml; KUBECONFIG, when set, is used instead. See docs/launcher.md.`,
		Example: `  # the container command of seed 001's job.yaml
  paddlejob launch -- --config=trainer_config.py --trainer_count=4 --num_passes=10 --use_gpu=0

  # seed 000: one pod, the trainer alone
  paddlejob launch --no-pserver -- --config=trainer_config.lr.py --save_dir=./output`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); (dash < 0 && len(args) > 0) || dash > 0 {
				return fmt.Errorf("unexpected argument %q: trainer arguments go after --", args[0])
			}
			opts.ExtraArgs = args
			mode, err := launcher.ParseDataMode(dataMode)
			if err != nil {
				return err
			}
			opts.DataMode = mode
			signals := make(chan os.Signal, 2)
			signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(signals)
			opts.Signals = signals
			opts.Stdout, opts.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()

			err = launcher.Run(cmd.Context(), opts)
			if exit := (*launcher.ExitError)(nil); errors.As(err, &exit) {
				return exitError{code: exit.Code, msg: exit.Reason}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Parallelism, "parallelism", 0, "pods the Job runs (default $PADDLE_PARALLELISM, else the Job's .spec.parallelism)")
	f.StringVar(&opts.PServerCmd, "pserver-cmd", opts.PServerCmd, "pserver command line, split like a shell would (no shell runs)")
	f.StringVar(&opts.TrainerCmd, "trainer-cmd", opts.TrainerCmd, "trainer command line, split like a shell would (no shell runs)")
	f.BoolVar(&opts.NoPServer, "no-pserver", false, "run only the trainer, as trainer 0 (seed 000)")
	f.StringVar(&dataMode, "data-mode", dataMode, "how data and TRAIN_CONFIG_DIR reach the working directory: link or copy")
	f.StringVar(&opts.WorkDir, "workdir", opts.WorkDir, "working directory of the pserver and trainer; data goes to <workdir>/data")
	f.DurationVar(&opts.Timeout, "timeout", opts.Timeout, "how long to wait for all pods to run with an IP")
	f.DurationVar(&opts.PollInterval, "poll-interval", opts.PollInterval, "how often to look at the pods while waiting")
	f.DurationVar(&opts.GracePeriod, "grace-period", opts.GracePeriod, "time between SIGTERM and SIGKILL when stopping the pserver or trainer")
	f.DurationVar(&opts.TrainerDelay, "trainer-delay", 0, "wait this long after starting the pserver before starting the trainer")
	f.DurationVar(&opts.Linger, "pserver-linger", opts.Linger, "after the trainer succeeds, keep the pserver serving the other pods' trainers at most this long")
	return cmd
}
