package controller

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/paddlejob/paddlejob/internal/paddlefailure"
	"github.com/paddlejob/paddlejob/internal/truncate"
)

// A failure explains itself: every container of a job's pods keeps the end
// of its log as its termination message, and the message of a failure (the
// Failed and Restarting conditions, the events) quotes the line that says
// what failed and, for a known failure (internal/paddlefailure), its cause
// and fix.

// keepLogTails gives every container of a pod, init containers included,
// whose template leaves it unset terminationMessagePolicy
// FallbackToLogsOnError: the kubelet then keeps the end of a failed
// container's log (80 lines, 2048 bytes at most) in its terminated state.
// A container whose template chose File keeps it: its program writes a
// message of its own.
func keepLogTails(spec *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			if cs[i].TerminationMessagePolicy == "" {
				cs[i].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
			}
		}
	}
}

// The line of a termination message a failure's message quotes is at most
// maxLogLine bytes, maxExplainedLogLine beside an explanation: the message
// then still fits in an event's note (maxEventNote).
const (
	maxLogLine          = 256
	maxExplainedLogLine = 160
)

// logSummary is ": <line>", the line of a termination message that says
// what failed (paddlefailure.KeyLine), at most limit bytes ("" for an
// empty message).
func logSummary(message string, limit int) string {
	line := paddlefailure.KeyLine(message)
	if line == "" {
		return ""
	}
	return ": " + truncate.String(paddlefailure.Defuse(line), limit)
}

// explainTermination is what a failure's message says of a container's
// end beyond its exit code: the line of its log that says what failed
// (logSummary), and the explanation of a failure the table knows (nil for
// another), which withExplanation appends.
func explainTermination(p *corev1.Pod, container string, t *corev1.ContainerStateTerminated) (string, *paddlefailure.Explanation) {
	e := paddlefailure.Explain(p, container, t)
	if e == nil {
		return logSummary(t.Message, maxLogLine), nil
	}
	return logSummary(t.Message, maxExplainedLogLine), e
}

// withExplanation ends a failure's message with the sentence of its
// explanation: "... Known failure [id]: <cause> Fix: <fix> See <doc>".
func withExplanation(msg string, e *paddlefailure.Explanation) string {
	if e == nil {
		return msg
	}
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg + " " + e.String()
}
