package node

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/paddlejob/paddlejob/internal/localcluster/kubebin"
)

// nodeObject is the Node the node registers: not Ready until its controllers
// run (see setNodeReady), with the host's resources and the kubelet API port.
func nodeObject(name, nodeIP string, kubeletPort int32, capacity corev1.ResourceList, info corev1.NodeSystemInfo) *corev1.Node {
	condition := func(t corev1.NodeConditionType, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   runtime.GOOS,
				corev1.LabelArchStable: runtime.GOARCH,
				"type":                 "virtual-kubelet",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: nodeIP},
				{Type: corev1.NodeHostName, Address: name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: kubeletPort}},
			NodeInfo:        info,
			Conditions: []corev1.NodeCondition{
				condition(corev1.NodeReady, "KubeletNotReady", "the node is starting"),
				condition(corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				condition(corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				condition(corev1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			},
		},
	}
}

// setNodeReady marks the node Ready, once it runs pods.
func setNodeReady(n *corev1.Node, now metav1.Time) {
	for i := range n.Status.Conditions {
		if c := &n.Status.Conditions[i]; c.Type == corev1.NodeReady {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"
			c.LastTransitionTime = now
		}
	}
}

// nodeCapacity is the host's capacity (see hostCapacity) with the resources
// of over replacing or adding to it; over is checked with ValidateCapacity.
func nodeCapacity(maxPods int, stateDir string, over corev1.ResourceList) (corev1.ResourceList, error) {
	if err := ValidateCapacity(over); err != nil {
		return nil, err
	}
	capacity, err := hostCapacity(maxPods, stateDir)
	if err != nil {
		return nil, err
	}
	for name, q := range over {
		capacity[name] = q
	}
	return capacity, nil
}

// ValidateCapacity checks resources to advertise: qualified names, no
// negative quantity, and whole numbers of extended resources (such as
// nvidia.com/gpu), as the API requires of them.
func ValidateCapacity(list corev1.ResourceList) error {
	var errs []error
	for _, name := range sortedResourceNames(list) {
		q := list[name]
		if msgs := validation.IsQualifiedName(string(name)); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("capacity: resource name %q: %s", name, strings.Join(msgs, "; ")))
			continue
		}
		if q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("capacity: %s=%s is negative", name, q.String()))
		}
		if isExtendedResource(name) && q.MilliValue()%1000 != 0 {
			errs = append(errs, fmt.Errorf("capacity: %s=%s: an extended resource must be a whole number", name, q.String()))
		}
	}
	return errors.Join(errs...)
}

// isExtendedResource reports whether name is a resource of a domain other
// than kubernetes.io, such as nvidia.com/gpu.
func isExtendedResource(name corev1.ResourceName) bool {
	domain, _, ok := strings.Cut(string(name), "/")
	return ok && domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io") && !strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
}

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// nodeOwnLabels are the labels the node sets itself, which --node-labels
// may not change.
var nodeOwnLabels = []string{corev1.LabelHostname, corev1.LabelOSStable, corev1.LabelArchStable}

// ParseNodeLabels reads --node-labels: KEY=VALUE pairs separated by commas
// ("accelerator=nvidia-tesla-p100,zone=lab"), checked by ValidateNodeLabels.
// An empty string is no labels.
func ParseNodeLabels(s string) (map[string]string, error) {
	labels := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return labels, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("node label %q: want KEY=VALUE", strings.TrimSpace(kv))
		}
		labels[k] = v
	}
	return labels, ValidateNodeLabels(labels)
}

// ValidateNodeLabels checks labels for the Node: keys and values as the API
// requires them of labels, and none of the labels the node sets itself
// (kubernetes.io/hostname, os, arch).
func ValidateNodeLabels(labels map[string]string) error {
	var errs []error
	for _, k := range sortedKeys(labels) {
		v := labels[k]
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("node label key %q is not valid: %s", k, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("node label %s=%q: the value is not valid: %s", k, v, strings.Join(msgs, "; ")))
		}
		if slices.Contains(nodeOwnLabels, k) {
			errs = append(errs, fmt.Errorf("node label %s is set by the node itself and cannot be given", k))
		}
	}
	return errors.Join(errs...)
}

// hostCapacity is the host's CPUs, memory and the state directory's disk,
// plus the pods the node accepts.
func hostCapacity(maxPods int, stateDir string) (corev1.ResourceList, error) {
	mem, err := memTotal()
	if err != nil {
		return nil, err
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(stateDir, &fs); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", stateDir, err)
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(int64(maxPods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(fs.Blocks)*fs.Bsize, resource.BinarySI),
	}, nil
}

// memTotal reads MemTotal from /proc/meminfo, in bytes.
func memTotal() (int64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return parseMemTotal(data)
}

func parseMemTotal(meminfo []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing MemTotal: %w", err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no MemTotal in /proc/meminfo")
}

// hostSystemInfo describes the machine in the Node's status.
func hostSystemInfo() corev1.NodeSystemInfo {
	info := corev1.NodeSystemInfo{
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
		KubeletVersion:          kubebin.KubernetesVersion,
		ContainerRuntimeVersion: "bubblewrap://sandboxed-processes",
		OSImage:                 osImage(),
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		info.KernelVersion = utsString(u.Release[:])
	}
	if id, err := os.ReadFile("/etc/machine-id"); err == nil {
		info.MachineID = strings.TrimSpace(string(id))
	}
	if id, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		info.BootID = strings.TrimSpace(string(id))
	}
	return info
}

func osImage() string {
	data, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return runtime.GOOS
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return runtime.GOOS
}

func utsString(chars []int8) string {
	b := make([]byte, 0, len(chars))
	for _, c := range chars {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}
