package localcluster

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/paddlejob/paddlejob/internal/localcluster/paddleruntime"
)

// settings are the options that shape a running cluster: Up on a running
// cluster refuses to ignore different ones.
func (o *Options) settings() Settings {
	return Settings{Nodes: o.Nodes, ImageTable: o.ImageTable, NoOperator: o.NoOperator, GPUs: o.GPUs, NodeLabels: o.NodeLabels, Capacity: o.Capacity, PaddleRuntime: o.PaddleRuntime, HostPathRO: o.HostPathRO, HostPathRW: o.HostPathRW, PodSecurity: o.PodSecurity, NodeRuntime: o.NodeRuntime}
}

// Settings are what a cluster was started with, beyond its add-ons.
type Settings struct {
	Nodes         int               `json:"nodes,omitempty"`
	ImageTable    string            `json:"imageTable,omitempty"`
	NoOperator    bool              `json:"noOperator,omitempty"`
	GPUs          int               `json:"gpus,omitempty"`
	NodeLabels    map[string]string `json:"nodeLabels,omitempty"`
	Capacity      string            `json:"capacity,omitempty"`
	PaddleRuntime string            `json:"paddleRuntime,omitempty"`
	HostPathRO    []string          `json:"hostPathRO,omitempty"`
	HostPathRW    []string          `json:"hostPathRW,omitempty"`
	PodSecurity   string            `json:"podSecurity,omitempty"`
	NodeRuntime   string            `json:"nodeRuntime,omitempty"`
}

// differences names the flags whose values differ from what the running
// cluster was started with.
func (s Settings) differences(asked Settings) []string {
	var out []string
	diff := func(flag string, was, now any, differ bool) {
		if differ {
			out = append(out, fmt.Sprintf("%s (runs with %v, asked %v)", flag, was, now))
		}
	}
	diff("--nodes", s.nodes(), asked.nodes(), s.nodes() != asked.nodes())
	diff("--image-table", s.ImageTable, asked.ImageTable, s.ImageTable != asked.ImageTable)
	diff("--no-operator", s.NoOperator, asked.NoOperator, s.NoOperator != asked.NoOperator)
	diff("--gpus", s.GPUs, asked.GPUs, s.GPUs != asked.GPUs)
	diff("--node-labels", s.NodeLabels, asked.NodeLabels, !maps.Equal(s.NodeLabels, asked.NodeLabels))
	diff("--capacity", s.Capacity, asked.Capacity, s.Capacity != asked.Capacity)
	diff("--host-path-ro", s.HostPathRO, asked.HostPathRO, !slices.Equal(s.HostPathRO, asked.HostPathRO))
	diff("--host-path-rw", s.HostPathRW, asked.HostPathRW, !slices.Equal(s.HostPathRW, asked.HostPathRW))
	diff("--pod-security", s.PodSecurityLevel(), asked.PodSecurityLevel(), s.PodSecurityLevel() != asked.PodSecurityLevel())
	diff("--node-runtime", s.nodeRuntime(), asked.nodeRuntime(), s.nodeRuntime() != asked.nodeRuntime())
	diff("$"+paddleruntime.EnvDir, s.PaddleRuntime, asked.PaddleRuntime, s.PaddleRuntime != asked.PaddleRuntime)
	return out
}

// nodeRuntime is what runs the cluster's pods (NodeRuntimes).
func (s Settings) nodeRuntime() string {
	if s.NodeRuntime == "" {
		return NodeRuntimeProcess
	}
	return s.NodeRuntime
}

// nodes is how many nodes the cluster has (a state written before there
// could be several says none: one).
func (s Settings) nodes() int { return max(s.Nodes, 1) }

// CheckNodeRuntime says what is wrong with a --node-runtime before anything
// starts.
func CheckNodeRuntime(runtime string) error {
	switch runtime {
	case "", NodeRuntimeProcess:
		return nil
	case NodeRuntimeContainerd:
		if os.Geteuid() != 0 {
			return fmt.Errorf("--node-runtime=%s runs the kubelet and containerd, which need root: run as root, or use the default process node (--node-runtime=%s)", runtime, NodeRuntimeProcess)
		}
		return nil
	}
	return fmt.Errorf("--node-runtime %q: want one of %s", runtime, strings.Join(NodeRuntimes, ", "))
}
