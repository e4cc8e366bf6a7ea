package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"time"

	"github.com/paddlejob/paddlejob/examples/collective"
	"github.com/paddlejob/paddlejob/examples/ctr"
)

// collectiveFlags are the collective command's own flags.
type collectiveFlags struct {
	endpointsDir string
	// dirFromEnv: $PADDLEJOB_ENDPOINTS_DIR named the directory.
	dirFromEnv        bool
	rendezvousTimeout time.Duration
	passDelay         time.Duration
}

// defaultEndpointsDir is where the operator mounts the membership files.
const defaultEndpointsDir = "/etc/paddlejob"

func (f *collectiveFlags) register(fs *flag.FlagSet) {
	dir := os.Getenv("PADDLEJOB_ENDPOINTS_DIR")
	f.dirFromEnv = dir != ""
	if dir == "" {
		dir = defaultEndpointsDir
	}
	fs.StringVar(&f.endpointsDir, "endpoints-dir", dir,
		"membership files the operator keeps current; training is elastic when they exist. $PADDLEJOB_ENDPOINTS_DIR sets the default")
	fs.DurationVar(&f.rendezvousTimeout, "rendezvous-timeout", 10*time.Minute, "elastic training: how long to wait for every member of an epoch")
	fs.DurationVar(&f.passDelay, "pass-delay", 0, "pause after each pass but the last, to make a job long enough to disturb on purpose")
}

// membership is the directory to train elastically with, or "" to train in
// the fixed ring of the environment. The default directory does not exist
// outside a cluster; a directory named by the flag or the environment must.
func (f *collectiveFlags) membership(fs *flag.FlagSet) (collective.MembershipDir, error) {
	explicit := f.dirFromEnv
	fs.Visit(func(fl *flag.Flag) { explicit = explicit || fl.Name == "endpoints-dir" })
	dir := collective.MembershipDir(f.endpointsDir)
	_, err := dir.Read()
	switch {
	case err == nil:
		return dir, nil
	case errors.Is(err, os.ErrNotExist) && !explicit:
		return "", nil
	default:
		return "", usagef("--endpoints-dir %s: %v", dir, err)
	}
}

// trainElastic runs one worker of an elastic job: it rejoins after failures,
// follows scaling, and leaves with success when scaled away or stopped by a
// signal.
func trainElastic(ctx context.Context, out streams, tf *trainFlags, cf *collectiveFlags, membership collective.MembershipDir, e env) error {
	self, err := e.self()
	if err != nil {
		if self = e("PADDLE_CURRENT_ENDPOINT"); self == "" {
			return usagef("elastic training needs this worker's endpoint: set POD_IP and PADDLE_PORT, or PADDLE_CURRENT_ENDPOINT")
		}
	}
	id, err := e.intOf(0, "PADDLE_TRAINER_ID", "TRAINER_ID")
	if err != nil {
		return err
	}
	job, rows, err := tf.jobRows(true) // any worker may become rank 0
	if err != nil {
		return err
	}
	logger := newLogger(out.stderr, "worker", id)
	result, err := collective.TrainElastic(ctx, collective.ElasticConfig{
		Self: self, Membership: membership, Job: job,
		Shard:             func(workers, rank int) []ctr.Row { return tf.shard(rows, workers, rank) },
		ConnectTimeout:    tf.connectTimeout,
		RendezvousTimeout: cf.rendezvousTimeout,
		PassDelay:         cf.passDelay,
		Log:               logger,
	})
	if err != nil && ctx.Err() != nil {
		// SIGTERM: the job is scaled down or finishing; neither is a failure.
		logger.Printf("%v: leaving the job", context.Cause(ctx))
		return nil
	}
	return report(out.stdout, result, err)
}
