package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/internal/localcluster/node"
	"github.com/paddlejob/paddlejob/internal/localcluster/paddleruntime"
)

func init() {
	register(newUpCmd)
	register(newDownCmd)
	register(newStatusCmd)
	register(newKubeconfigCmd)
}

// clusterFlags are the flags every local-cluster command shares.
type clusterFlags struct {
	home        string
	keepContext bool
	binaries    string
	imageTable  string
	noOperator  bool
	gpus        int
	nodes       int
	nodeLabels  []string
	with        []string
	capacity    string
	hostPathRO  []string
	hostPathRW  []string
	podSecurity string
	nodeRuntime string
}

func (f *clusterFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.home, "home", localcluster.DefaultHome(), "state directory of the local cluster ($PADDLEJOB_HOME)")
}

func (f *clusterFlags) options(cmd *cobra.Command) localcluster.Options {
	var dirs []string
	for _, d := range []string{f.binaries, os.Getenv("PADDLEJOB_BINARIES"), os.Getenv("KUBEBUILDER_ASSETS")} {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return localcluster.Options{Home: f.home, BinaryDirs: dirs, ImageTable: f.imageTable, NoOperator: f.noOperator,
		Nodes: f.nodes, GPUs: f.gpus, Capacity: f.capacity, HostPathRO: f.hostPathRO, HostPathRW: f.hostPathRW, PodSecurity: f.podSecurity, NodeRuntime: f.nodeRuntime, PaddleRuntime: os.Getenv(paddleruntime.EnvDir), With: f.with, Out: cmd.OutOrStdout(),
		// kubectl's kubeconfig: $KUBECONFIG, else ~/.kube/config.
		UserKubeconfig: clientcmd.NewDefaultPathOptions(), KeepContext: f.keepContext}
}

func newUpCmd() *cobra.Command {
	var f clusterFlags
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local Kubernetes cluster whose nodes run pods as sandboxed processes",
		Long: `Start a local cluster: etcd, kube-apiserver, kube-scheduler and kube-controller-manager
bound to 127.0.0.1 with generated certificates, the PaddleJob CRD and operator, and nodes
(--nodes, one by default) that run each pod as sandboxed host processes (bubblewrap), every
pod with a network namespace and an IP of its own, every node with its own IP, all joined
by the cluster network (docs/local-cluster.md#the-network). The first start builds the
control-plane binaries from Go modules (a few minutes, cached); later starts reuse them.
It installs no Paddle runtime: the node installs the pinned release a pod's image runs
on when a pod first needs it (about half a minute each, cached; the pod shows Pulling and
Pulled events meanwhile, as for an image pull), and later pods and starts reuse it.
A second 'up' reuses the running cluster (and refuses other settings than it runs with).

As kind and minikube do, it adds the cluster to your kubeconfig ($KUBECONFIG, else
~/.kube/config) as context "paddlejob" and makes it current, keeping every other
context: kubectl, the job commands and the SDKs then use it. 'paddlejob down' removes
the context and makes the one that was current before current again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := f.options(cmd)
			// Every flag is checked before any process starts.
			labels, err := f.check()
			if err != nil {
				return err
			}
			opts.NodeLabels = labels
			st, err := localcluster.Up(cmd.Context(), opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\nPodSecurity: namespaces enforce %s (warn restricted) unless labelled %s; namespace default is labelled %s, for the seeds' YAMLs (hostPath volumes, intranet: Host)\n",
				st.Settings.PodSecurityLevel(), localcluster.PodSecurityEnforceLabel, localcluster.PodSecurityPrivileged)
			if !f.keepContext {
				fmt.Fprintf(cmd.OutOrStdout(), "\nuse it with kubectl or:\n  paddlejob run -f job.yaml\n")
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "\nuse it with:\n  paddlejob run -f job.yaml --context %s\n", localcluster.ContextName(st.Home))
			}
			return nil
		},
	}
	f.bind(cmd)
	cmd.Flags().BoolVar(&f.keepContext, "keep-context", false, "add the cluster's context to your kubeconfig without making it current")
	cmd.Flags().StringVar(&f.binaries, "binaries", "", "directory holding etcd, kube-apiserver, kube-scheduler and kube-controller-manager, and coredns if it has one (default: build and cache them)")
	cmd.Flags().StringVar(&f.imageTable, "image-table", "", "YAML image table merged over the built-in one (see docs/local-node.md)")
	cmd.Flags().BoolVar(&f.noOperator, "no-operator", false, "start without the operator, to install it yourself (kubectl apply -k config/default)")
	cmd.Flags().StringVar(&f.capacity, "capacity", "", "resources the node advertises instead of this machine's CPUs and memory, e.g. cpu=32,memory=128Gi, for jobs sized for a real cluster (the scheduler then overcommits the machine; limits are still enforced per pod)")
	cmd.Flags().IntVar(&f.nodes, "nodes", 1, fmt.Sprintf("nodes of the cluster, 1 to %d: each a process with a network of its own and its own IP (spreading, anti-affinity, Host intranet across nodes, a lost node)", localcluster.MaxNodes))
	cmd.Flags().IntVar(&f.gpus, "gpus", 0, "nvidia.com/gpu each node advertises: emulated, so that GPU jobs schedule (their programs run on the CPU)")
	cmd.Flags().StringSliceVar(&f.with, "with", nil, "add-ons to run besides the control plane, built from their Go modules the first time (minutes, cached): "+
		"volcano (Volcano's scheduler with gang scheduling, its PodGroup and Queue CRDs and the default Queue), "+
		"coscheduling (scheduler-plugins' scheduler with Coscheduling, named "+localcluster.CoschedulingSchedulerName+", and its PodGroup CRD), "+
		"kueue (Kueue's manager for batch/v1 Jobs, a ClusterQueue sized to this machine and LocalQueue default in namespace default)")
	cmd.Flags().StringSliceVar(&f.hostPathRO, "host-path-ro", nil, "host directories pods may mount read-only through hostPath volumes and hostPath or local PersistentVolumes (the paths inside them); may be repeated")
	cmd.Flags().StringSliceVar(&f.hostPathRW, "host-path-rw", []string{localcluster.ExamplesDir}, "host directories pods may mount read-write the same way; every other host path is refused (but the build contexts, read-only, and their output/), and the cluster's home, your kubeconfig, /proc, /sys, /dev and sockets are never mounted; may be repeated (--host-path-rw= for none)")
	cmd.Flags().StringVar(&f.podSecurity, "pod-security", localcluster.DefaultPodSecurity, "PodSecurity level every namespace enforces unless labelled otherwise: privileged, baseline or restricted (restricted is warned in any case; namespace default is labelled privileged, for the seeds' YAMLs)")
	cmd.Flags().StringVar(&f.nodeRuntime, "node-runtime", localcluster.NodeRuntimeProcess, "what runs the nodes' pods: process (pods as sandboxed processes of this machine, no images) or containerd (the real kubelet with containerd and runc, images built on this machine; root only)")
	cmd.Flags().StringSliceVar(&f.nodeLabels, "node-labels", nil, "labels of the node, key=value,... (for jobs with a nodeSelector, e.g. accelerator=nvidia-tesla-p100)")
	return cmd
}

// check reads the flags of up, so that a bad one fails before anything
// starts; it returns the node labels.
func (f *clusterFlags) check() (map[string]string, error) {
	var errs []error
	labels, err := node.ParseNodeLabels(strings.Join(f.nodeLabels, ","))
	if err != nil {
		errs = append(errs, fmt.Errorf("--node-labels: %w", err))
	}
	if f.nodes < 1 || f.nodes > localcluster.MaxNodes {
		errs = append(errs, fmt.Errorf("--nodes %d: a local cluster has 1 to %d nodes", f.nodes, localcluster.MaxNodes))
	}
	if err := localcluster.CheckPodSecurityLevel(f.podSecurity); err != nil {
		errs = append(errs, err)
	}
	if err := localcluster.CheckNodeRuntime(f.nodeRuntime); err != nil {
		errs = append(errs, err)
	}
	if f.gpus < 0 {
		errs = append(errs, fmt.Errorf("--gpus %d: must be 0 or more", f.gpus))
	}
	if c := strings.Trim(f.capacity, ", "); c != "" {
		list, err := parseResourceList(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("--capacity %q: %w (want NAME=QUANTITY,..., e.g. cpu=8,memory=32Gi)", f.capacity, err))
		} else if _, ok := list["nvidia.com/gpu"]; ok {
			errs = append(errs, fmt.Errorf("--capacity %q: give the GPUs with --gpus", f.capacity))
		}
	}
	if f.imageTable != "" {
		if _, err := node.LoadImageTable(f.imageTable); err != nil {
			errs = append(errs, fmt.Errorf("--image-table: %w", err))
		}
	}
	if _, err := localcluster.ParseAddons(f.with); err != nil {
		errs = append(errs, fmt.Errorf("--with: %w", err))
	}
	return labels, errors.Join(errs...)
}

func newDownCmd() *cobra.Command {
	var f clusterFlags
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster and every pod it runs, remove its state and its kubeconfig context",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return localcluster.Down(f.options(cmd))
		},
	}
	f.bind(cmd)
	return cmd
}

func newStatusCmd() *cobra.Command {
	var f clusterFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show whether the local cluster runs, its components and its nodes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := localcluster.Report(cmd.Context(), f.options(cmd))
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, rep.Summary)
			if len(rep.Components) > 0 {
				fmt.Fprintln(out)
				fmt.Fprintf(out, "%-26s %-8s %-9s %s\n", "COMPONENT", "PID", "RESTARTS", "STATE")
				for _, c := range rep.Components {
					state := c.State
					if c.LastExit != "" {
						state += "; last exit: " + c.LastExit
					}
					if c.Requested > 0 {
						state += fmt.Sprintf("; restarted %d times on request (new image tables)", c.Requested)
					}
					fmt.Fprintf(out, "%-26s %-8d %-9d %s\n", c.Name, c.PID, c.Restarts, state)
				}
			}
			if len(rep.Nodes) > 0 {
				fmt.Fprintln(out)
				fmt.Fprintf(out, "%-26s %-12s %-16s %-5s %s\n", "NODE", "IP", "POD CIDR", "PODS", "STATE")
				for _, n := range rep.Nodes {
					fmt.Fprintf(out, "%-26s %-12s %-16s %-5d %s\n", n.Name, n.IP, n.PodCIDR, n.Pods, n.State)
				}
			}
			if rep.Kubeconfig != "" {
				fmt.Fprintf(out, "\nkubeconfig: %s\n", rep.Kubeconfig)
			}
			if !rep.Healthy {
				return exitError{code: 1}
			}
			return nil
		},
	}
	f.bind(cmd)
	return cmd
}

func newKubeconfigCmd() *cobra.Command {
	var f clusterFlags
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the path of the local cluster's kubeconfig",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := localcluster.KubeconfigPath(f.home)
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("no local cluster in %s: start one with `paddlejob up`", strings.TrimSuffix(path, "/kubeconfig"))
			}
			fmt.Fprintln(cmd.OutOrStdout(), path)
			return nil
		},
	}
	f.bind(cmd)
	return cmd
}
