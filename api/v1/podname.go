package v1

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodName is the name of the pod of a role and index: <job>-<role>-<index>.
func PodName(job string, rt ReplicaType, index int) string {
	return fmt.Sprintf("%s-%s-%d", job, rt, index)
}

// ParsePodName is PodName's inverse: the role and index of the pod of job
// named name, or an error when name is not PodName of one of the job's roles
// and an index (the job's name may itself hold "-worker-1" and the like: the
// job's prefix is cut first).
func ParsePodName(job, name string) (ReplicaType, int, error) {
	rest, ok := strings.CutPrefix(name, job+"-")
	if !ok || job == "" {
		return "", 0, fmt.Errorf("pod name %q does not start with its PaddleJob's name %q", name, job+"-")
	}
	for _, rt := range ReplicaTypes {
		digits, ok := strings.CutPrefix(rest, string(rt)+"-")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(digits)
		if err != nil || i < 0 || PodName(job, rt, i) != name {
			return "", 0, fmt.Errorf("pod name %q: %q after the role is not an index (0, 1, 2…)", name, digits)
		}
		return rt, i, nil
	}
	return "", 0, fmt.Errorf("pod name %q: %q is not <role>-<index> with role %s", name, rest, OneOf(ReplicaTypes))
}

// PodReplica is the role and index of a pod of a PaddleJob, parsed from its
// name (ParsePodName, with the job its LabelJobName names); its
// LabelReplicaType and LabelReplicaIndex must agree, so a pod whose labels
// were edited is not taken for another.
func PodReplica(pod *corev1.Pod) (ReplicaType, int, error) {
	rt, i, err := ParsePodName(pod.Labels[LabelJobName], pod.Name)
	if err != nil {
		return "", 0, err
	}
	if got := pod.Labels[LabelReplicaType]; got != string(rt) {
		return "", 0, fmt.Errorf("pod %s: label %s is %q, its name says %q", pod.Name, LabelReplicaType, got, rt)
	}
	if got := pod.Labels[LabelReplicaIndex]; got != strconv.Itoa(i) {
		return "", 0, fmt.Errorf("pod %s: label %s is %q, its name says %d", pod.Name, LabelReplicaIndex, got, i)
	}
	return rt, i, nil
}

// ComparePods orders pods by role (in ReplicaTypes' order: ps, worker,
// heter), then index, then name; pods PodReplica cannot place come last, by
// name. Every list of a job's pods, the operator's and the SDK's, is in this
// order.
func ComparePods(a, b *corev1.Pod) int {
	rank := func(p *corev1.Pod) (int, int) {
		rt, i, err := PodReplica(p)
		if err != nil {
			return len(ReplicaTypes), 0
		}
		return slices.Index(ReplicaTypes, rt), i
	}
	ra, ia := rank(a)
	rb, ib := rank(b)
	return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(ia, ib), strings.Compare(a.Name, b.Name))
}
