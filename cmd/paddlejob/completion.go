package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// Shell completion: cobra's `paddlejob completion bash|zsh|fish|powershell`
// writes the script; these functions complete job names (and, for logs, a
// job's pods and roles) from the cluster the command would talk to.

// completeJobNames completes the names of the namespace's jobs: for the
// first argument, or for every argument when multi.
func completeJobNames(t *targetFlags, multi bool) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 && !multi {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := t.client(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
		}
		jobs, _, err := c.ListSelected(cmd.Context(), t.ns(), "")
		if err != nil {
			return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, j := range jobs {
			if strings.HasPrefix(j.Name, toComplete) && !slices.Contains(args, j.Name) {
				names = append(names, j.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeLogsArgs completes a job's name, then its pods' short names and
// roles.
func completeLogsArgs(t *targetFlags) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	jobs := completeJobNames(t, false)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return jobs(cmd, args, toComplete)
		}
		if len(args) > 1 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := t.client(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
		}
		pods, err := c.Pods(cmd.Context(), t.ns(), args[0])
		if err != nil {
			return nil, cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
		}
		return podSelectors(args[0], pods), cobra.ShellCompDirectiveNoFileComp
	}
}

// podSelectors are what `logs JOB` takes after the job: all, the roles of
// its pods, and their short names.
func podSelectors(job string, pods []corev1.Pod) []string {
	out := []string{"all"}
	for _, p := range pods {
		if r := p.Labels[paddlev1.LabelReplicaType]; r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	for _, p := range pods {
		out = append(out, strings.TrimPrefix(p.Name, job+"-"))
	}
	return out
}
