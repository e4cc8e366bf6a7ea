package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/termprogress"
	"github.com/paddlejob/paddlejob/pkg/client"
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
			hist, err := c.MetricHistory(ctx, job)
			if err != nil {
				return err
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

func printMetrics(w io.Writer, job *paddlev1.PaddleJob, hist []client.MetricSeries, width, height int) {
	fmt.Fprintf(w, "PaddleJob %s/%s  %s\n", job.Namespace, job.Name, dash(string(job.Status.Phase)))
	if line := termprogress.TrainingLine(job.Status.Progress); line != "" {
		fmt.Fprintf(w, "progress  %s\n", line)
	}
	if len(hist) == 0 {
		fmt.Fprintln(w, "No metric history: the training program reported no metrics yet (docs/progress.md shows how).")
		return
	}
	for _, s := range hist {
		if len(s.Points) == 0 {
			continue
		}
		values := make([]float64, len(s.Points))
		for i, p := range s.Points {
			values[i] = p.Value
		}
		first, last := s.Points[0], s.Points[len(s.Points)-1]
		span := last.Time.Sub(first.Time).Round(time.Second)
		fmt.Fprintf(w, "\n%s  latest %.6g  (%d points over %s)\n", s.Name, last.Value, len(s.Points), span)
		for _, l := range termprogress.Chart(values, width, height) {
			fmt.Fprintln(w, "  "+l)
		}
	}
}
