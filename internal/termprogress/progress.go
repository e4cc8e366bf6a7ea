package termprogress

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/sidecar"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// PodState is a pod's state in a word, as kubectl get pods shows it. A
// sidecar (an init container with restartPolicy Always) that has started
// counts as initialized, as a completed init container does: it runs beside
// the containers, and the pod is not stuck in "Init:".
func PodState(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	if p.Status.Phase == corev1.PodPending {
		for i, cs := range p.Status.InitContainerStatuses {
			if cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
				continue
			}
			if sidecar.Named(&p.Spec, cs.Name) && ptr.Deref(cs.Started, false) {
				continue
			}
			if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing" {
				return "Init:" + cs.State.Waiting.Reason
			}
			if cs.Name == "wait-for-endpoints" && cs.State.Running != nil {
				return "WaitingForPeers"
			}
			return fmt.Sprintf("Init:%d/%d", i, len(p.Status.InitContainerStatuses))
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
				return cs.State.Waiting.Reason
			}
		}
		if p.Spec.NodeName == "" {
			return "Pending"
		}
		return "ContainerCreating"
	}
	if p.Status.Phase == "" {
		return "Pending"
	}
	return string(p.Status.Phase)
}

// Lines renders a snapshot: a header, then each role's pods counted by state.
func Lines(s client.Snapshot, elapsed time.Duration) []string {
	if s.Job == nil {
		return []string{fmt.Sprintf("waiting for the PaddleJob to exist (%s)", round(elapsed))}
	}
	j := s.Job
	phase := string(j.Status.Phase)
	if phase == "" {
		phase = "Submitted"
	}
	lines := []string{fmt.Sprintf("PaddleJob %s/%s  %s  mode %s  %s", j.Namespace, j.Name, phase, orDash(string(j.Status.Mode)), round(elapsed))}
	for _, rt := range paddlev1.ReplicaTypes {
		rs := j.Spec.Replicas(rt)
		if rs == nil {
			continue
		}
		counts := roleCounts(s, rt)
		lines = append(lines, fmt.Sprintf("  %-7s %d/%d running   %s", rt, counts["Running"], rs.Replicas, countsText(counts)))
	}
	if t := TrainingLine(j.Status.Progress); t != "" {
		lines = append(lines, "  training "+t)
	}
	for _, l := range PendingLines(j.Name, s.Unschedulable) {
		lines = append(lines, "  "+l)
	}
	for _, l := range WaitingLines(j.Name, s.Pods) {
		lines = append(lines, "  "+l)
	}
	if c := meta.FindStatusCondition(j.Status.Conditions, paddlev1.JobRunning); len(s.Unschedulable) == 0 && c != nil &&
		(c.Reason == paddlev1.ReasonUnschedulable || c.Reason == paddlev1.ReasonCannotStart) && c.Status == metav1.ConditionFalse {
		// The operator's account, when the client could not explain
		// (the kubelet's reasons: an image it cannot pull).
		lines = append(lines, "  "+c.Reason+": "+c.Message)
	}
	return lines
}

// roleCounts counts a role's pods by state; once the job finished, the
// counts it finished with (its status), since the pods it stopped or
// cleaned up are going or gone.
func roleCounts(s client.Snapshot, rt paddlev1.ReplicaType) map[string]int {
	counts := map[string]int{}
	if rs := s.Job.Status.ReplicaStatus(rt); s.Job.Status.IsFinished() && rs != nil {
		for state, n := range map[string]int32{"Succeeded": rs.Succeeded, "Failed": rs.Failed, "Stopped": rs.Stopped} {
			if n > 0 {
				counts[state] = int(n)
			}
		}
		return counts
	}
	for i := range s.Pods {
		if s.Pods[i].Labels[paddlev1.LabelReplicaType] == string(rt) {
			counts[PodState(&s.Pods[i])]++
		}
	}
	return counts
}

// PendingLines say why pods of a job stay Pending, pods with one reason on
// one line ("Pending worker-0, worker-1: needs 5 CPU, the node has 2"),
// then what would let them run on the local cluster.
func PendingLines(job string, us []client.Unschedulable) []string {
	var held podsByCause
	for _, u := range us {
		held.add(u.String(), strings.TrimPrefix(u.Pod, job+"-"))
	}
	out := held.lines("Pending ")
	if hint := client.LocalClusterHint(us); hint != "" {
		out = append(out, hint)
	}
	return out
}

// podsByCause groups pods' short names by what holds them, the causes in the
// order first seen.
type podsByCause struct {
	causes []string
	pods   map[string][]string
}

func (g *podsByCause) add(cause, pod string) {
	if g.pods == nil {
		g.pods = map[string][]string{}
	}
	if g.pods[cause] == nil {
		g.causes = append(g.causes, cause)
	}
	g.pods[cause] = append(g.pods[cause], pod)
}

// lines are one line per cause: prefix, its pods, then the cause.
func (g *podsByCause) lines(prefix string) []string {
	out := make([]string, 0, len(g.causes))
	for _, c := range g.causes {
		out = append(out, fmt.Sprintf("%s%s: %s", prefix, strings.Join(g.pods[c], ", "), c))
	}
	return out
}

// startingReasons are the waiting reasons of a container on its way, which
// the pod's state shows; what the node says beside them (a runtime being
// installed, a volume it cannot mount yet) only the message does.
var startingReasons = map[string]bool{"ContainerCreating": true, "PodInitializing": true}

// WaitingLines say what holds pods that are placed but not started, pods
// with one message on one line ("worker-0, worker-1: hostPath volume
// "output": ..."): the first waiting container's message of each pod, when
// its reason is one of startingReasons. Other reasons (an image that
// cannot be pulled) are in the job's own status.
func WaitingLines(job string, pods []corev1.Pod) []string {
	var held podsByCause
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
			continue
		}
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil {
				if startingReasons[w.Reason] && w.Message != "" {
					held.add(w.Message, strings.TrimPrefix(p.Name, job+"-"))
				}
				break
			}
		}
	}
	return held.lines("")
}

// Summary is a snapshot on one line.
func Summary(s client.Snapshot) string {
	lines := Lines(s, 0)
	if len(lines) == 1 {
		return lines[0]
	}
	head := strings.Fields(lines[0])
	roles := make([]string, 0, len(lines)-1)
	for _, l := range lines[1:] {
		roles = append(roles, strings.Join(strings.Fields(l), " "))
	}
	return fmt.Sprintf("%s: %s", strings.Join(head[:3], " "), strings.Join(roles, "; "))
}

func countsText(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	if len(parts) == 0 {
		return "no pods yet"
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }

// Renderer writes successive snapshots.
type Renderer struct {
	w     io.Writer
	tty   bool
	drawn int    // lines drawn last time, to redraw over on a terminal
	last  string // the last summary, to print only changes otherwise
}

// NewRenderer renders to w, in place when tty.
func NewRenderer(w io.Writer, tty bool) *Renderer { return &Renderer{w: w, tty: tty} }

// Render shows a snapshot. On a terminal it redraws the previous rendering;
// otherwise it prints a line when the summary changed.
func (r *Renderer) Render(s client.Snapshot, elapsed time.Duration) {
	if !r.tty {
		if sum := Summary(s); sum != r.last {
			r.last = sum
			fmt.Fprintf(r.w, "[%s] %s\n", round(elapsed), sum)
		}
		return
	}
	lines := Lines(s, elapsed)
	if r.drawn > 0 {
		fmt.Fprintf(r.w, "\033[%dA", r.drawn) // cursor up to the first drawn line
	}
	for _, l := range lines {
		fmt.Fprintf(r.w, "\033[2K%s\n", l) // clear the line, then write it
	}
	for i := len(lines); i < r.drawn; i++ {
		fmt.Fprint(r.w, "\033[2K\n")
	}
	r.drawn = max(len(lines), r.drawn)
}

// barWidth is the width of a progress bar, in cells.
const barWidth = 24

// Bar draws percent (0-100) as a bar of width cells.
func Bar(percent int32, width int) string {
	p := min(max(int(percent), 0), 100)
	full := p * width / 100
	return "[" + strings.Repeat("#", full) + strings.Repeat(".", width-full) + "]"
}

// TrainingLine is a job's reported progress on one line: a bar, the
// percent, the epoch and step, the estimated time remaining and the latest
// metrics; "" when the training program reported none.
func TrainingLine(p *paddlev1.JobProgress) string {
	if p == nil {
		return ""
	}
	var parts []string
	if p.Percent != nil {
		parts = append(parts, fmt.Sprintf("%s %3d%%", Bar(*p.Percent, barWidth), *p.Percent))
	}
	if p.Epoch != nil {
		e := fmt.Sprintf("epoch %d", *p.Epoch)
		if p.TotalEpochs != nil {
			e += fmt.Sprintf("/%d", *p.TotalEpochs)
		}
		parts = append(parts, e)
	}
	if p.Step != nil {
		parts = append(parts, fmt.Sprintf("step %d", *p.Step))
	}
	if eta := ETA(p); eta != "" {
		parts = append(parts, "ETA "+eta)
	}
	if m := MetricsText(p); m != "" {
		parts = append(parts, m)
	}
	return strings.Join(parts, "  ")
}

// ETA is the estimated time remaining, "" when none or the training is done.
func ETA(p *paddlev1.JobProgress) string {
	if p == nil || p.EstimatedSecondsRemaining == nil || (p.Percent != nil && *p.Percent >= 100) {
		return ""
	}
	return (time.Duration(*p.EstimatedSecondsRemaining) * time.Second).String()
}

// MetricsText lists the latest metrics, name=value, in the reported order.
func MetricsText(p *paddlev1.JobProgress) string {
	if p == nil {
		return ""
	}
	out := make([]string, 0, len(p.Metrics))
	for _, m := range p.Metrics {
		out = append(out, m.Name+"="+m.Value)
	}
	return strings.Join(out, " ")
}
