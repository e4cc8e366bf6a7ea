package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

func init() { register(newSubmitCmd) }

type submitFlags struct {
	target   targetFlags
	job      client.TrainingJob
	ceph     client.CephFSVolume
	nfs      []string
	pvcs     []string
	hosts    []string
	env      []string
	intranet string
	clean    string
	dryRun   bool
	output   string
	wait     bool
	timeout  time.Duration
}

// flagOf names the flag behind a TrainingJob field in error messages.
var flagOf = map[string]string{
	"Name": "--name", "Image": "--image", "EntryPoint": "--entry-point", "WorkDir": "--workdir",
	"CPU": "--cpu", "Memory": "--memory", "GPU": "--gpu", "PServers": "--pservers", "Trainers": "--trainers", "Collective": "--collective",
	"CephFS.Monitors": "--cephfs-monitors", "CephFS.MountPath": "--cephfs-mount-path",
	"NFS": "--nfs", "NFS.MountPath": "--nfs", "Claims.ClaimName": "--pvc", "Claims.MountPath": "--pvc",
	"HostPaths.Path": "--host-path", "HostPaths.MountPath": "--host-path",
	"RestartPolicy": "--restart-policy", "ProgressDeadlineSeconds": "--progress-deadline-seconds",
}

func newSubmitCmd() *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit --name NAME --image IMAGE --entry-point CMD --cpu N --memory SIZE",
		Short: "Submit a training job from the paddle.job SDK's parameters (parameter-server, or --collective)",
		Long: `Build a PaddleJob from the parameters of the original paddle.job SDK — runtime image,
entry point, CPU, memory and GPU per pod, numbers of pservers (default 2) and trainers
(default 3), CephFS, NFS, PVC or host-path volumes — check them, and create it (or print
it with --dry-run). Trainers receive TRAINER_ID and TRAINERS, and the whole Paddle
environment contract.`,
		Example: `  paddlejob submit --name paddle-job --image yancey1989/paddle-job --entry-point "python train.py" \
      --workdir /example/word2vec --cpu 3 --memory 8G --pservers 3 \
      --cephfs-monitors 172.19.32.166:6789 --dry-run -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return submit(cmd, &f) },
	}
	f.target.bind(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.job.Name, "name", "", "job name (job_name)")
	fl.StringVar(&f.job.Image, "image", "", "runtime image holding the trainer package (runtime_image)")
	fl.StringVar(&f.job.EntryPoint, "entry-point", "", `command that starts a trainer or pserver, e.g. "python train.py" (entry_point)`)
	fl.StringVar(&f.job.WorkDir, "workdir", "", "where the trainer package is in the image (trainer_package_path)")
	fl.IntVar(&f.job.CPU, "cpu", 0, "CPUs per pod (cpu_nums)")
	fl.StringVar(&f.job.Memory, "memory", "", "memory per pod: an integer with E, P, T, G, M or K (powers of 1000, e.g. 8G) or Ei, Pi, Ti, Gi, Mi or Ki (powers of 1024, e.g. 8Gi)")
	fl.IntVar(&f.job.GPU, "gpu", 0, "GPUs per trainer (gpu_nums)")
	fl.IntVar(&f.job.PServers, "pservers", client.DefaultPServers, "parameter servers")
	fl.IntVar(&f.job.Trainers, "trainers", client.DefaultTrainers, "trainers")
	fl.BoolVar(&f.job.Collective, "collective", false, "a collective job: --trainers workers and no parameter server (entry point e.g. \"python -m paddle.distributed.launch train.py\")")
	fl.StringSliceVar(&f.ceph.Monitors, "cephfs-monitors", nil, "CephFS monitor addresses (monitors_addr); mounts CephFS in every pod")
	fl.StringVar(&f.ceph.User, "cephfs-user", client.DefaultCephFSUser, "CephFS user")
	fl.StringVar(&f.ceph.SecretName, "cephfs-secret", client.DefaultCephFSSecretName, "Secret holding the CephFS key")
	fl.StringVar(&f.ceph.MountPath, "cephfs-mount-path", client.DefaultCephFSMountPath, "where CephFS is mounted in the pods")
	fl.StringVar(&f.ceph.Path, "cephfs-path", client.DefaultCephFSPath, "CephFS path to mount")
	fl.StringArrayVar(&f.nfs, "nfs", nil, "NFS volume SERVER:/EXPORT:/MOUNT[:ro] (repeatable)")
	fl.StringArrayVar(&f.pvcs, "pvc", nil, "PersistentVolumeClaim CLAIM:/MOUNT[:ro] (repeatable)")
	fl.StringArrayVar(&f.hosts, "host-path", nil, "host directory /HOST:/MOUNT[:ro] (repeatable)")
	fl.StringArrayVar(&f.env, "env", nil, "environment variable NAME=VALUE for every container (repeatable)")
	fl.StringVar(&f.intranet, "intranet", "", paddlev1.OneOf(paddlev1.Intranets)+" (default "+string(paddlev1.IntranetPodIP)+")")
	fl.StringVar(&f.clean, "clean-pod-policy", "", paddlev1.OneOf(paddlev1.CleanPodPolicies)+" (default "+string(paddlev1.CleanPodPolicyNever)+")")
	fl.StringVar((*string)(&f.job.RestartPolicy), "restart-policy", "", "what a failed pserver or trainer does: "+paddlev1.OneOf(paddlev1.RestartPolicies)+
		" (default "+string(paddlev1.RestartPolicyNever)+"); a restart brings every pod of the job back")
	fl.Int64Var(&f.job.ProgressDeadlineSeconds, "progress-deadline-seconds", 0, "restart (or, under --restart-policy Never, fail) the job when its program reports no progress for this long (0: never)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the PaddleJob instead of creating it")
	fl.StringVarP(&f.output, "output", "o", "yaml", "format of --dry-run: yaml or json")
	fl.BoolVar(&f.wait, "wait", false, "wait for the job to finish; exit 1 if it fails")
	fl.DurationVar(&f.timeout, "timeout", 0, "with --wait, give up after this long")
	return cmd
}

func submit(cmd *cobra.Command, f *submitFlags) error {
	if f.job.Collective && !cmd.Flags().Changed("pservers") {
		f.job.PServers = 0 // no parameter servers, rather than the default 2
	}
	job, err := f.build()
	if err != nil {
		return err
	}
	if f.dryRun {
		return printJobs(cmd.OutOrStdout(), []paddlev1.PaddleJob{*job}, f.output, false, true)
	}
	c, err := f.target.client(cmd)
	if err != nil {
		return err
	}
	created, err := c.Create(cmd.Context(), job)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "PaddleJob %s/%s created in %s\n", created.Namespace, created.Name, f.target.where())
	if !f.wait {
		return nil
	}
	done, err := c.WaitFor(cmd.Context(), created.Namespace, created.Name, client.Finished, f.timeout)
	if err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	return finished(done, cmd.ErrOrStderr(), time.Since(created.CreationTimestamp.Time))
}

// build turns the flags into a PaddleJob, with errors that name the flags.
func (f *submitFlags) build() (*paddlev1.PaddleJob, error) {
	t := f.job
	t.Namespace = f.target.ns()
	t.Intranet = paddlev1.Intranet(f.intranet)
	t.CleanPodPolicy = paddlev1.CleanPodPolicy(f.clean)
	var errs []error
	// The SDK reads 0 as "the default" (other bad counts it reports
	// itself); a flag set to 0 is a mistake.
	for _, n := range []struct {
		flag  string
		value int
	}{{"--pservers", t.PServers}, {"--trainers", t.Trainers}} {
		if n.value == 0 && !(t.Collective && n.flag == "--pservers") {
			errs = append(errs, fmt.Errorf("%s %d: must be between 1 and %d", n.flag, n.value, paddlev1.MaxReplicas))
		}
	}
	if len(f.ceph.Monitors) > 0 {
		ceph := f.ceph
		t.CephFS = &ceph
	}
	for _, v := range f.nfs {
		parts := strings.Split(v, ":")
		if len(parts) < 3 || len(parts) > 4 {
			errs = append(errs, fmt.Errorf("--nfs %q: want SERVER:/EXPORT:/MOUNT[:ro]", v))
			continue
		}
		ro, err := readOnly("--nfs", v, parts[3:])
		errs = append(errs, err)
		t.NFS = append(t.NFS, client.NFSVolume{Server: parts[0], Path: parts[1], MountPath: parts[2], ReadOnly: ro})
	}
	for _, v := range f.pvcs {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || len(parts) > 3 {
			errs = append(errs, fmt.Errorf("--pvc %q: want CLAIM:/MOUNT[:ro]", v))
			continue
		}
		ro, err := readOnly("--pvc", v, parts[2:])
		errs = append(errs, err)
		t.Claims = append(t.Claims, client.ClaimVolume{ClaimName: parts[0], MountPath: parts[1], ReadOnly: ro})
	}
	for _, v := range f.hosts {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || len(parts) > 3 {
			errs = append(errs, fmt.Errorf("--host-path %q: want /HOST:/MOUNT[:ro]", v))
			continue
		}
		ro, err := readOnly("--host-path", v, parts[2:])
		errs = append(errs, err)
		t.HostPaths = append(t.HostPaths, client.HostPathVolume{Path: parts[0], MountPath: parts[1], ReadOnly: ro})
	}
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			errs = append(errs, fmt.Errorf("--env %q: want NAME=VALUE", kv))
			continue
		}
		if t.Env == nil {
			t.Env = map[string]string{}
		}
		t.Env[k] = v
	}
	if t.Intranet != "" && !slices.Contains(paddlev1.Intranets, t.Intranet) {
		errs = append(errs, fmt.Errorf("--intranet %q: want %s", f.intranet, paddlev1.OneOf(paddlev1.Intranets)))
	}
	if t.CleanPodPolicy != "" && !slices.Contains(paddlev1.CleanPodPolicies, t.CleanPodPolicy) {
		errs = append(errs, fmt.Errorf("--clean-pod-policy %q: want %s", f.clean, paddlev1.OneOf(paddlev1.CleanPodPolicies)))
	}
	job, err := t.Build()
	if err != nil {
		errs = append(errs, asFlagErrors(err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return job, nil
}

func readOnly(flag, value string, rest []string) (bool, error) {
	if len(rest) == 0 {
		return false, nil
	}
	if rest[0] != "ro" {
		return false, fmt.Errorf("%s %q: the optional last part must be ro", flag, value)
	}
	return true, nil
}

// asFlagErrors renames the SDK's field errors after the flags that set them.
func asFlagErrors(err error) error {
	var out []error
	for _, e := range unjoin(err) {
		var fe *client.FieldError
		if errors.As(e, &fe) {
			if flag, ok := flagOf[fe.Field]; ok {
				out = append(out, fmt.Errorf("%s %v: %s", flag, fe.Value, fe.Rule))
				continue
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
