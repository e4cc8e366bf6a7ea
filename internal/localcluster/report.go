package localcluster

import (
	"context"
	"fmt"

	"github.com/paddlejob/paddlejob/internal/localcluster/node"
)

// StatusReport describes a local cluster for `paddlejob status`.
type StatusReport struct {
	Healthy    bool
	Summary    string
	Kubeconfig string
	Components []ComponentStatus
}

// ComponentStatus is one process of the cluster.
type ComponentStatus struct {
	Name string
	// PID is the component's, or its supervisor's while it waits to restart.
	PID   int
	State string
	// Restarts counts the supervisor's restarts of the component.
	Restarts int
	// LastExit says how it last ended, when it was restarted.
	LastExit string
}

// Report says whether a local cluster runs, and how its parts are.
func Report(ctx context.Context, opts Options) (*StatusReport, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	l := layout{opts.Home}
	st, err := readState(l)
	if err != nil {
		return &StatusReport{Summary: fmt.Sprintf("no local cluster in %s (start one with `paddlejob up`)", opts.Home)}, nil
	}
	rep := &StatusReport{Kubeconfig: l.kubeconfig()}
	for _, p := range st.Processes {
		sup := p.supervised()
		c := ComponentStatus{Name: p.Name, PID: sup.PID, State: "running", Restarts: sup.Restarts}
		switch {
		case !p.alive():
			c.PID, c.State = p.PID, "not running, nor its supervisor (log: "+p.Log+")"
		case sup.PID == 0:
			c.PID, c.State = p.PID, "restarting (log: "+p.Log+")"
		}
		if sup.Restarts > 0 {
			c.LastExit = fmt.Sprintf("%s at %s", sup.LastExit, sup.LastExitTime.Format("15:04:05"))
		}
		rep.Components = append(rep.Components, c)
	}
	rep.Healthy = healthy(ctx, st)
	switch {
	case !rep.Healthy:
		rep.Summary = fmt.Sprintf("local cluster in %s is NOT healthy: run `paddlejob down` then `paddlejob up`", opts.Home)
	default:
		rep.Summary = fmt.Sprintf("local cluster running at %s since %s", st.Server(), st.Started.Format("2006-01-02 15:04:05"))
		if cfg, err := loadAdmin(st); err == nil {
			if err := nodeReady(ctx, cfg, NodeName); err != nil {
				rep.Summary += "; node: " + err.Error()
			} else {
				rep.Summary += fmt.Sprintf("; node %s Ready at %s (pods %s, Services %s, DNS %s)",
					NodeName, nodeIP, node.DefaultPodCIDR, serviceCIDR, clusterDNSIP)
			}
		}
	}
	return rep, nil
}
