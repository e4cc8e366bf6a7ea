package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	opprogress "github.com/paddlejob/paddlejob/internal/operator/progress"
	"github.com/paddlejob/paddlejob/internal/termprogress"
)

func init() { register(newMetricsCmd) }

func newMetricsCmd() *cobra.Command {
	var t targetFlags
	var width, height int
	cmd := &cobra.Command{
		Use:   "metrics NAME",
		Short: "Chart the metrics a PaddleJob's training program reported (loss, AUC...) over time",
		Long: `Print the job's reported progress and, for each metric its training program
reported, the recorded curve as a small chart. The operator records the curves in the
ConfigMap NAME-metrics, written at most every 30 seconds while reports come
(docs/progress.md); the latest values are in the job's status.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := t.client(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			job, err := c.Get(ctx, t.ns(), args[0])
			if err != nil {
				return err
			}
			cm, err := c.Clientset().CoreV1().ConfigMaps(job.Namespace).Get(ctx, opprogress.HistoryConfigMapName(job.Name), metav1.GetOptions{})
			var hist opprogress.History
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return fmt.Errorf("reading the metric history of PaddleJob %s/%s: %w", job.Namespace, job.Name, err)
			case !opprogress.IsHistoryOf(cm, job.Name, job.UID):
				// Another's ConfigMap of that name: not this job's history.
			default:
				if hist, err = opprogress.DecodeHistory(cm); err != nil {
					return err
				}
			}
			printMetrics(cmd.OutOrStdout(), job, hist, width, height)
			return nil
		},
	}
	t.bind(cmd)
	cmd.Flags().IntVar(&width, "width", 60, "columns of each chart")
	cmd.Flags().IntVar(&height, "height", 8, "rows of each chart")
	return cmd
}

func printMetrics(w io.Writer, job *paddlev1.PaddleJob, hist opprogress.History, width, height int) {
	fmt.Fprintf(w, "PaddleJob %s/%s  %s\n", job.Namespace, job.Name, dash(string(job.Status.Phase)))
	if line := termprogress.TrainingLine(job.Status.Progress); line != "" {
		fmt.Fprintf(w, "progress  %s\n", line)
	}
	if len(hist.Metrics) == 0 {
		fmt.Fprintln(w, "No metric history: the training program reported no metrics yet (docs/progress.md shows how).")
		return
	}
	for _, s := range hist.Metrics {
		if len(s.Points) == 0 {
			continue
		}
		values := make([]float64, len(s.Points))
		for i, p := range s.Points {
			values[i] = p[1]
		}
		first, last := s.Points[0], s.Points[len(s.Points)-1]
		span := time.Duration((last[0] - first[0]) * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(w, "\n%s  latest %.6g  (%d points over %s)\n", s.Name, last[1], len(s.Points), span)
		for _, l := range termprogress.Chart(values, width, height) {
			fmt.Fprintln(w, "  "+l)
		}
	}
}
