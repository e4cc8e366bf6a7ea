package main

import (
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// What describe shows of a job's failed containers: the explanation of a
// known failure and the last lines of the container's log, which the
// kubelet keeps in its terminated state (docs/paddle-known-issues.md).
const (
	// maxDescribedFailures is how many failed containers describe shows.
	maxDescribedFailures = 3
	// maxLastLines is how many of a failed container's last lines it shows.
	maxLastLines = 12
	// wrapWidth is where a cause or fix is wrapped.
	wrapWidth = 100
)

// describeFailures writes the job's failed containers, each with its
// explanation and last lines; when its pods are gone, the explanation its
// conditions keep. Nothing when nothing failed.
func describeFailures(w io.Writer, j *paddlev1.PaddleJob, pods []corev1.Pod) {
	failures := client.ContainerFailures(pods)
	fromJob := client.FailureExplanation(j)
	if len(failures) == 0 && fromJob == nil {
		return
	}
	fmt.Fprintln(w, "Failures:")
	shown := false
	for i, f := range failures {
		if i == maxDescribedFailures {
			fmt.Fprintf(w, "  (%d more failed containers: paddlejob logs %s --previous)\n", len(failures)-i, j.Name)
			break
		}
		what := fmt.Sprintf("exited with code %d", f.ExitCode)
		if f.Reason != "" {
			what += " (" + f.Reason + ")"
		}
		if f.Restarted {
			what += ", then restarted"
		}
		kind := ""
		if f.Init {
			kind = " (init container)"
		}
		fmt.Fprintf(w, "  %s/%s%s %s\n", f.Pod, f.Container, kind, what)
		if f.Explanation != nil {
			writeExplanation(w, f.Explanation)
			shown = shown || (fromJob != nil && f.Explanation.ID == fromJob.ID)
		}
		writeLastLines(w, f.LastLines)
	}
	if fromJob != nil && !shown {
		fmt.Fprintln(w, "  the job's latest failure (its conditions; the pod is gone):")
		writeExplanation(w, fromJob)
	}
}

func writeExplanation(w io.Writer, e *client.Explanation) {
	fmt.Fprintf(w, "    Known failure:  %s\n", e.ID)
	fmt.Fprintf(w, "    Cause:          %s\n", wrap(e.Cause, wrapWidth, "                    "))
	fmt.Fprintf(w, "    Fix:            %s\n", wrap(e.Fix, wrapWidth, "                    "))
	fmt.Fprintf(w, "    More:           %s\n", e.Doc)
}

// writeLastLines writes the end of a container's last lines.
func writeLastLines(w io.Writer, text string) {
	text = strings.TrimRight(text, "\n")
	if strings.TrimSpace(text) == "" {
		fmt.Fprintln(w, "    (no output kept)")
		return
	}
	lines := strings.Split(text, "\n")
	fmt.Fprintln(w, "    Last lines:")
	if len(lines) > maxLastLines {
		lines = lines[len(lines)-maxLastLines:]
	}
	for _, l := range lines {
		fmt.Fprintf(w, "      %s\n", l)
	}
}

// wrap breaks text into lines of about width columns at spaces, the lines
// after the first indented.
func wrap(text string, width int, indent string) string {
	var b strings.Builder
	col := 0
	for i, word := range strings.Fields(text) {
		switch {
		case i == 0:
		case col+1+len(word) > width:
			b.WriteString("\n" + indent)
			col = 0
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}
