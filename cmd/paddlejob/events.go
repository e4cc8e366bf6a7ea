package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/paddlejob/paddlejob/pkg/client"
)

func init() { register(newEventsCmd) }

func newEventsCmd() *cobra.Command {
	var t targetFlags
	var watchFlag bool
	cmd := &cobra.Command{
		Use:   "events [NAME...]",
		Short: "List the events of PaddleJobs and their pods, oldest first",
		Long: `List the events about the PaddleJobs named and their pods (their pods' events outlive
deleted pods), or, with no name, about every job of the namespace: the operator's
(pods created, restarts, failures) and the scheduler's and node's about the pods
(FailedScheduling, Started, BackOff...). -w prints new ones until interrupted.`,
		Example: `  paddlejob events wide-and-deep
  paddlejob events -w`,
		ValidArgsFunction: completeJobNames(&t, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := t.client(cmd)
			if err != nil {
				return err
			}
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			events, err := c.JobEvents(ctx, t.ns(), args...)
			if err != nil {
				return err
			}
			tbl := &table{w: out}
			if len(events) == 0 && !watchFlag {
				fmt.Fprintln(out, "No events found.")
				return nil
			}
			tbl.row([]string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"})
			for _, e := range events {
				tbl.row(eventRow(&e, time.Now()))
			}
			if err := tbl.flush(); err != nil || !watchFlag {
				return err
			}
			return watchEvents(cmd, c, &t, args, tbl)
		},
	}
	t.bind(cmd)
	cmd.Flags().BoolVarP(&watchFlag, "watch", "w", false, "after listing, print new events until interrupted")
	return cmd
}

// watchEvents prints the events that come, until the command is stopped.
func watchEvents(cmd *cobra.Command, c *client.Client, t *targetFlags, names []string, tbl *table) error {
	ctx := cmd.Context()
	rv := ""
	for ctx.Err() == nil {
		// A job created meanwhile has pods to follow too.
		filter, err := c.JobEventFilter(ctx, t.ns(), names...)
		if err != nil {
			return err
		}
		w, err := c.WatchEvents(ctx, t.ns(), rv)
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			e, ok := ev.Object.(*corev1.Event)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				if ev.Type == watch.Error {
					rv = "" // too old: go on from now
				}
				continue
			}
			rv = e.ResourceVersion
			if filter.Matches(e) {
				tbl.row(eventRow(e, time.Now()))
				if err := tbl.flush(); err != nil {
					w.Stop()
					return err
				}
			}
		}
		w.Stop()
	}
	return nil
}

// eventRow is an event as kubectl events shows it.
func eventRow(e *corev1.Event, now time.Time) []string {
	seen := duration.HumanDuration(now.Sub(client.EventTime(*e)))
	if e.Count > 1 {
		seen += fmt.Sprintf(" (x%d)", e.Count)
	}
	object := strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
	return []string{seen, e.Type, e.Reason, object, strings.TrimSpace(e.Message)}
}
