package client

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/paddlejob/paddlejob/internal/sidecar"
)

// Why a pod stays Pending: the scheduler says only "0/1 nodes are available:
// 1 Insufficient cpu"; a user needs how much the pod asks for and how much
// the nodes have, to know what to change.

// Unschedulable is why the scheduler cannot place a pod.
type Unschedulable struct {
	// Pod is the pod's name.
	Pod string
	// Message is the scheduler's own message (the PodScheduled condition's).
	Message string
	// Shortfalls are the resources the pod asks more of than any node it
	// may run on has (or has free).
	Shortfalls []Shortfall
	// Selector holds the pod's nodeSelector when no schedulable node has
	// those labels.
	Selector map[string]string
	// Requests are the pod's. In a cluster of one node, Node is its name,
	// Allocatable what it has and Requested what its other pods request.
	Requests, Allocatable, Requested corev1.ResourceList
	Node                             string
}

// Shortfall is a resource a pod asks more of than any node offers.
type Shortfall struct {
	Resource corev1.ResourceName
	// Needed is the pod's request.
	Needed resource.Quantity
	// Allocatable is the most any node the pod may run on has.
	Allocatable resource.Quantity
	// Free is the most any such node has left after its other pods'
	// requests; equal to Allocatable when the node has nothing to give.
	Free resource.Quantity
	// Nodes is how many nodes were considered.
	Nodes int
}

// String says what the pod needs and what the nodes have:
// "needs 5 CPU, the node has 2".
func (s Shortfall) String() string {
	the := "the node has"
	if s.Nodes > 1 {
		the = "the largest node has"
	}
	if s.Needed.Cmp(s.Allocatable) > 0 {
		return fmt.Sprintf("needs %s, %s %s", quantityText(s.Resource, s.Needed), the, amount(s.Resource, s.Allocatable))
	}
	if s.Nodes > 1 {
		the = "the emptiest node has"
	}
	return fmt.Sprintf("needs %s, %s %s free of %s: other pods request the rest", quantityText(s.Resource, s.Needed), the,
		amount(s.Resource, s.Free), amount(s.Resource, s.Allocatable))
}

// String is the reason in one line.
func (u *Unschedulable) String() string {
	var parts []string
	if len(u.Selector) > 0 {
		parts = append(parts, fmt.Sprintf("its nodeSelector %s matches no node", labelsText(u.Selector)))
	}
	for _, s := range u.Shortfalls {
		parts = append(parts, s.String())
	}
	if len(parts) == 0 {
		return "the scheduler cannot place it: " + u.Message
	}
	return strings.Join(parts, "; ")
}

// ExplainUnschedulable says why the scheduler left pod unplaced, given the
// cluster's nodes and the pods bound to them; nil when the scheduler has not
// reported it unschedulable.
func ExplainUnschedulable(pod *corev1.Pod, nodes []corev1.Node, boundPods []corev1.Pod) *Unschedulable {
	cond := unschedulable(pod)
	if cond == nil {
		return nil
	}
	u := &Unschedulable{Pod: pod.Name, Message: cond.Message, Requests: PodRequests(pod)}
	if len(nodes) == 1 {
		u.Node = nodes[0].Name
	}
	var candidates []*corev1.Node
	for i := range nodes {
		n := &nodes[i]
		if !n.Spec.Unschedulable && hasLabels(n.Labels, pod.Spec.NodeSelector) {
			candidates = append(candidates, n)
		}
	}
	if len(candidates) == 0 {
		if len(pod.Spec.NodeSelector) > 0 {
			u.Selector = pod.Spec.NodeSelector
		}
		return u
	}
	requested := map[string]corev1.ResourceList{}
	for i := range boundPods {
		p := &boundPods[i]
		if p.Spec.NodeName == "" || p.UID == pod.UID || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		sum := requested[p.Spec.NodeName]
		if sum == nil {
			sum = corev1.ResourceList{}
			requested[p.Spec.NodeName] = sum
		}
		for name, q := range PodRequests(p) {
			total := sum[name]
			total.Add(q)
			sum[name] = total
		}
	}
	needs := u.Requests
	if len(nodes) == 1 && len(candidates) == 1 {
		u.Allocatable, u.Requested = candidates[0].Status.Allocatable, requested[candidates[0].Name]
	}
	for _, name := range slices.Sorted(maps.Keys(needs)) {
		need := needs[name]
		if need.IsZero() {
			continue
		}
		var most, mostFree resource.Quantity
		for _, n := range candidates {
			alloc := n.Status.Allocatable[name]
			free := alloc.DeepCopy()
			free.Sub(requested[n.Name][name])
			if alloc.Cmp(most) > 0 {
				most = alloc.DeepCopy()
			}
			if free.Cmp(mostFree) > 0 {
				mostFree = free
			}
		}
		if need.Cmp(mostFree) > 0 {
			u.Shortfalls = append(u.Shortfalls, Shortfall{Resource: name, Needed: need, Allocatable: most, Free: mostFree, Nodes: len(candidates)})
		}
	}
	return u
}

// unschedulable is the condition in which the scheduler reported a pod
// unschedulable, nil when it did not (yet).
func unschedulable(pod *corev1.Pod) *corev1.PodCondition {
	if pod.Spec.NodeName != "" || pod.Status.Phase != corev1.PodPending || pod.DeletionTimestamp != nil {
		return nil
	}
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c
		}
	}
	return nil
}

// PodRequests is what the scheduler reserves for a pod, as Kubernetes
// computes a pod's effective requests: for each resource, the sum over its
// containers and sidecars (init containers with restartPolicy Always, which
// run beside them), or, when that is more, the most any init container
// needs while it runs: its own request plus those of the sidecars declared
// before it, which run meanwhile; plus the pod's overhead.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		addRequests(out, containerRequests(c))
	}
	sidecars, initPeak := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range pod.Spec.InitContainers {
		reqs := containerRequests(c)
		if sidecar.Is(&c) {
			addRequests(out, reqs)
			addRequests(sidecars, reqs)
			reqs = sidecars
		} else {
			addRequests(reqs, sidecars)
		}
		for name, q := range reqs {
			if q.Cmp(initPeak[name]) > 0 {
				initPeak[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range initPeak {
		if q.Cmp(out[name]) > 0 {
			out[name] = q.DeepCopy()
		}
	}
	addRequests(out, pod.Spec.Overhead)
	return out
}

// addRequests adds each of add's quantities to sum's.
func addRequests(sum, add corev1.ResourceList) {
	for name, q := range add {
		total := sum[name]
		total.Add(q)
		sum[name] = total
	}
}

// containerRequests are a container's requests; a resource with a limit and
// no request requests its limit, as the API server defaults it.
func containerRequests(c corev1.Container) corev1.ResourceList {
	out := c.Resources.Requests.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range c.Resources.Limits {
		if _, ok := out[name]; !ok {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// WhyPending explains each of pods that the scheduler cannot place, reading
// the nodes and the pods bound to them only when there is one. Credentials
// that may not read nodes (a namespace's user) get the scheduler's message.
func (c *Client) WhyPending(ctx context.Context, pods []corev1.Pod) []Unschedulable {
	var waiting []*corev1.Pod
	for i := range pods {
		if unschedulable(&pods[i]) != nil {
			waiting = append(waiting, &pods[i])
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	var out []Unschedulable
	nodes, bound, err := c.nodesAndTheirPods(ctx)
	for _, p := range waiting {
		if err != nil {
			out = append(out, Unschedulable{Pod: p.Name, Message: unschedulable(p).Message})
		} else if u := ExplainUnschedulable(p, nodes, bound); u != nil {
			out = append(out, *u)
		}
	}
	return out
}

// nodesAndTheirPods lists the nodes and the pods bound to them that have
// not finished (what the scheduler counts), in two requests.
func (c *Client) nodesAndTheirPods(ctx context.Context) ([]corev1.Node, []corev1.Pod, error) {
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the nodes: %w", err)
	}
	bound, err := c.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermNotEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	).String()})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the pods bound to nodes: %w", err)
	}
	return nodes.Items, bound.Items, nil
}

// pendingKey identifies what the scheduler said about the pods it could
// not place, so that a watch explains them again only when that changes.
func pendingKey(pods []corev1.Pod) string {
	var b strings.Builder
	for i := range pods {
		if c := unschedulable(&pods[i]); c != nil {
			fmt.Fprintf(&b, "%s/%s %s %s\n", pods[i].UID, pods[i].Name, c.LastTransitionTime, c.Message)
		}
	}
	return b.String()
}

// LocalNodeName is the name of the local cluster's node (paddlejob up).
const LocalNodeName = "paddlejob-node"

// maxOvercommit is how many times this machine's CPUs or memory the hint
// asks the local node to offer at most: past it, a job sized for a real
// cluster cannot usefully train here, however the node is started.
const maxOvercommit = 16

// LocalClusterHint says how to start the local cluster so that the pods
// fit: what its node should offer instead of this machine's CPUs and memory,
// enough for these pods and those it runs. It is "" when that would not
// help, or the pods are not the local cluster's (its node is LocalNodeName).
func LocalClusterHint(us []Unschedulable) string {
	for _, u := range us {
		if u.Node != LocalNodeName {
			return ""
		}
	}
	labels := map[string]string{}
	var allocatable, requested corev1.ResourceList
	needs := corev1.ResourceList{}
	for _, u := range us {
		for k, v := range u.Selector {
			labels[k] = v
		}
		if u.Allocatable != nil {
			allocatable, requested = u.Allocatable, u.Requested
		}
		for name, q := range u.Requests {
			sum := needs[name]
			sum.Add(q)
			needs[name] = sum
		}
	}
	// Enough for what the node's pods request already and every pod here,
	// CPUs in whole cores.
	capacity := map[corev1.ResourceName]resource.Quantity{}
	for name, need := range needs {
		total := requested[name].DeepCopy()
		total.Add(need)
		if name == corev1.ResourceCPU {
			total = *resource.NewQuantity((total.MilliValue()+999)/1000, resource.DecimalSI)
		}
		have := allocatable[name]
		if allocatable == nil || total.Cmp(have) <= 0 {
			continue
		}
		if name != "nvidia.com/gpu" && !have.IsZero() && total.MilliValue() > maxOvercommit*have.MilliValue() {
			return fmt.Sprintf("the pods ask for %s in all, this machine has %s: lower the job's requests, or run it on a cluster that large",
				quantityText(name, total), amount(name, have))
		}
		capacity[name] = total
	}
	var flags []string
	var list []string
	for _, name := range slices.Sorted(maps.Keys(capacity)) {
		q := capacity[name]
		switch name {
		case "nvidia.com/gpu":
			flags = append(flags, "--gpus "+q.String())
		case corev1.ResourceCPU:
			list = append(list, "cpu="+amount(name, q))
		case corev1.ResourceMemory:
			list = append(list, "memory="+bytesText(q.Value()))
		default:
			list = append(list, string(name)+"="+q.String())
		}
	}
	if len(list) > 0 {
		flags = append([]string{"--capacity " + strings.Join(list, ",")}, flags...)
	}
	if len(labels) > 0 {
		flags = append(flags, "--node-labels "+labelsText(labels))
	}
	if len(flags) == 0 {
		return ""
	}
	return "the local cluster's node offers this machine's resources; restart it offering more (the machine is then overcommitted): paddlejob down; paddlejob up " + strings.Join(flags, " ")
}

func hasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func labelsText(labels map[string]string) string {
	pairs := make([]string, 0, len(labels))
	for k, v := range labels {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// quantityText writes a quantity for people: "5 CPU", "500m CPU",
// "8Gi memory", "1.5Gi memory", "4 nvidia.com/gpu".
func quantityText(name corev1.ResourceName, q resource.Quantity) string {
	if name == corev1.ResourceCPU {
		return amount(name, q) + " CPU"
	}
	return amount(name, q) + " " + string(name)
}

// amount is a quantity without its resource's name: "5", "1000", "1.5",
// "1.5Gi" (CPUs as a count, not "1k" or "1500m").
func amount(name corev1.ResourceName, q resource.Quantity) string {
	switch name {
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return bytesText(q.Value())
	case corev1.ResourceCPU:
		return strconv.FormatFloat(float64(q.MilliValue())/1000, 'f', -1, 64)
	}
	return q.String()
}

// bytesText is a byte count in the largest binary unit that leaves at least
// one whole, with one decimal when it is not whole.
func bytesText(n int64) string {
	units := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d%s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f%s", v, units[i])
}
