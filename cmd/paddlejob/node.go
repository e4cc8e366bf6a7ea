package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/paddlejob/paddlejob/internal/localcluster/node"
)

func init() { register(newNodeCmd) }

func newNodeCmd() *cobra.Command {
	cfg := node.Config{
		NodeName:    node.DefaultNodeName,
		NodeIP:      node.DefaultNodeIP,
		PodCIDR:     node.DefaultPodCIDR,
		ServiceCIDR: node.DefaultServiceCIDR,
		KubeletPort: node.DefaultKubeletPort,
		MaxPods:     node.DefaultMaxPods,
	}
	var kubeconfig string
	var verbosity int
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run the local cluster's node: pods bound to it run as sandboxed processes on this machine",
		Long: `Run a Kubernetes node for this machine. Each pod bound to it runs as host
processes in a bubblewrap sandbox, in a network namespace of its own with an
IP of the pod CIDR, on a bridge in the node's network namespace (which holds
the node IP and nothing of the host's network); images are mapped to local
commands by the image table. The node runs until interrupted,
then stops every pod.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" {
				return errors.New("--kubeconfig is required")
			}
			if cfg.StateDir == "" {
				return errors.New("--state-dir is required")
			}
			rest, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return err
			}
			cfg.RESTConfig = rest
			cfg.Log = newLogger(cmd.ErrOrStderr(), verbosity)
			klog.SetLogger(cfg.Log)
			n, err := node.New(cfg)
			if err != nil {
				return err
			}
			return n.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server to register with (required)")
	f.StringVar(&cfg.NodeName, "node-name", cfg.NodeName, "name of the Node")
	f.StringVar(&cfg.StateDir, "state-dir", "", "directory for the pods' files, logs and volumes (required)")
	f.StringSliceVar(&cfg.HiddenPaths, "hide", nil, "host directories no pod may see, besides --state-dir (the local cluster hides its whole state); may be repeated")
	f.StringSliceVar(&cfg.HiddenFiles, "hide-file", nil, "host files (kubeconfigs) no pod may mount, nor a directory holding one; may be repeated")
	f.StringSliceVar(&cfg.HostPathRO, "host-path-ro", nil, "host directories whose paths pods may mount read-only (hostPath volumes, hostPath and local PersistentVolumes); may be repeated")
	f.StringSliceVar(&cfg.HostPathRW, "host-path-rw", nil, "host directories whose paths pods may mount read-write; every other host path is refused (but the image table's build contexts, read-only, and their output/), and none may be, hold or lie in --state-dir or a --hide directory, hold a --hide-file, or be /proc, /sys, /dev, a socket or device; may be repeated")
	f.StringVar(&cfg.NodeIP, "node-ip", cfg.NodeIP, "the node's IP, in its network namespace: the kubelet API listens there, and hostNetwork pods have it")
	f.StringVar(&cfg.PodCIDR, "pod-cidr", cfg.PodCIDR, "the pods' network: its first address is their gateway, and each pod gets one whose last octet is 100-254")
	f.StringVar(&cfg.ServiceCIDR, "service-cidr", cfg.ServiceCIDR, "cluster IPs (comma-separated CIDRs), local to the node's services namespace, where its Service proxy and cluster DNS server listen")
	f.StringVar(&cfg.ClusterDNS.IP, "cluster-dns", node.DefaultClusterDNSIP, "address of the cluster DNS server, in the service CIDR: pods resolve names with it (with --cluster-dns-server)")
	f.StringVar(&cfg.ClusterDNS.Binary, "cluster-dns-server", "", "CoreDNS executable the node runs in its network namespace on --cluster-dns (default: none, and pods get no cluster name server)")
	f.StringVar(&cfg.ClusterDNS.Kubeconfig, "cluster-dns-kubeconfig", "", "CoreDNS's kubeconfig, reaching the API server from the node's network namespace")
	f.StringVar(&cfg.ClusterPodCIDR, "cluster-pod-cidr", "", "every node's pods, holding --pod-cidr (this node's share): the rest is reached over the node's uplink (default: --pod-cidr)")
	f.StringVar(&cfg.NodesCIDR, "nodes-cidr", node.DefaultNodesCIDR, "the nodes' network, holding --node-ip: the other nodes are reached over the node's uplink")
	f.StringVar(&cfg.ClusterNetworkSocket, "cluster-network", "", "Unix socket of the cluster network (paddlejob cluster-network) the node attaches its uplink to: the other nodes and the host's forwarded endpoints are behind it")
	f.StringVar(&cfg.PodAPIServer, "pod-api-server", "", "the API server's URL as pods are given it (KUBERNETES_SERVICE_HOST and _PORT; default: the kubeconfig's)")
	f.IntVar(&cfg.KubeletPort, "kubelet-port", cfg.KubeletPort, "port of the kubelet API (logs)")
	f.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "serving certificate of the kubelet API (default: self-signed, kept in the state directory)")
	f.StringVar(&cfg.TLSKeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	f.StringVar(&cfg.ClientCAFile, "client-ca-file", "", "when set, the kubelet API requires client certificates signed by this CA")
	f.StringVar(&cfg.ImageTableFile, "image-table", "", "YAML file mapping images to local commands, merged over the built-in entries")
	f.IntVar(&cfg.MaxPods, "max-pods", cfg.MaxPods, "pods the node accepts")
	nodeResourceFlags(f, &cfg)
	f.StringVar(&cfg.Bwrap, "bwrap", "", "path of bubblewrap (default: bwrap on PATH)")
	f.IntVar(&verbosity, "v", 0, "log verbosity (higher logs more)")
	return cmd
}

// nodeResourceFlags are the flags of what the node offers and what each
// container gets by default.
func nodeResourceFlags(f *pflag.FlagSet, cfg *node.Config) {
	f.Func("capacity", "resources to advertise instead of the host's, e.g. cpu=64,memory=256Gi,nvidia.com/gpu=4 (more than the host has overcommits it: limits are enforced per pod, requests only schedule; GPUs are emulated); may be repeated", func(v string) error {
		list, err := parseResourceList(v)
		if err != nil {
			return err
		}
		if cfg.Capacity == nil {
			cfg.Capacity = corev1.ResourceList{}
		}
		for name, q := range list {
			cfg.Capacity[name] = q
		}
		return nil
	})
	f.Func("node-labels", "labels to add to the Node, e.g. accelerator=nvidia-tesla-p100,zone=lab; may be repeated", func(v string) error {
		labels, err := node.ParseNodeLabels(v)
		if err != nil {
			return err
		}
		if cfg.NodeLabels == nil {
			cfg.NodeLabels = map[string]string{}
		}
		for k, l := range labels {
			cfg.NodeLabels[k] = l
		}
		return nil
	})
	f.Int64Var(&cfg.PodPidsLimit, "pod-pids-limit", node.DefaultPodPidsLimit, "processes and threads each container may have (its cgroup's pids.max); -1 for no limit")
	f.Func("pod-memory-limit", "memory limit of a container that sets none, e.g. 8Gi (default: half the host's memory); -1 for no limit", func(v string) error {
		return parseBytes(v, &cfg.PodMemoryLimit, true)
	})
	f.Func("tmp-size", fmt.Sprintf("size of each container's /tmp tmpfs (default %s)", resource.NewQuantity(node.DefaultTmpSize, resource.BinarySI)), func(v string) error {
		return parseBytes(v, &cfg.TmpSize, false)
	})
	f.Func("shm-size", fmt.Sprintf("size of each container's /dev/shm tmpfs (default %s)", resource.NewQuantity(node.DefaultShmSize, resource.BinarySI)), func(v string) error {
		return parseBytes(v, &cfg.ShmSize, false)
	})
}

// parseResourceList reads NAME=QUANTITY,... .
func parseResourceList(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want NAME=QUANTITY", kv)
		}
		q, err := resource.ParseQuantity(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[corev1.ResourceName(strings.TrimSpace(name))] = q
	}
	return out, node.ValidateCapacity(out)
}

// parseBytes reads a quantity of bytes (1Gi, 512Mi) into out; noneOK allows
// -1, no limit.
func parseBytes(v string, out *int64, noneOK bool) error {
	if noneOK && strings.TrimSpace(v) == "-1" {
		*out = -1
		return nil
	}
	q, err := resource.ParseQuantity(strings.TrimSpace(v))
	if err != nil || q.Sign() <= 0 {
		return fmt.Errorf("%q: want a positive quantity of bytes such as 512Mi or 2Gi", v)
	}
	*out = q.Value()
	return nil
}

// newLogger is a local cluster component's log: at verbosity v, with no
// stack traces (errors a component retries, such as API conflicts, need
// none).
func newLogger(w io.Writer, v int) logr.Logger {
	return zap.New(zap.Level(zapcore.Level(-v)), zap.WriteTo(w), zap.StacktraceLevel(zapcore.PanicLevel))
}
