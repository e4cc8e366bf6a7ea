package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// StatusReport describes a local cluster for `paddlejob status`.
type StatusReport struct {
	Healthy    bool
	Summary    string
	Kubeconfig string
	Components []ComponentStatus
	// Nodes are the cluster's nodes, in node order.
	Nodes []NodeStatus
}

// NodeStatus is one node of the cluster.
type NodeStatus struct {
	Name    string
	IP      string
	PodCIDR string
	// State is "Ready", or why the node is not.
	State string
	// Pods counts the pods bound to it that have not finished.
	Pods int
}

// ComponentStatus is one process of the cluster.
type ComponentStatus struct {
	Name string
	// PID is the component's, or its supervisor's while it waits to restart.
	PID   int
	State string
	// Restarts counts the supervisor's restarts of the component after it
	// exited on its own, Requested those the cluster asked for.
	Restarts, Requested int
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
		c := ComponentStatus{Name: p.Name, PID: sup.PID, State: "running", Restarts: sup.Restarts, Requested: sup.Requested}
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
		rep.Summary += fmt.Sprintf("; network %s (host %s), pods %s, Services %s, DNS %s",
			nodesCIDR, hostIP, podCIDR, serviceCIDR, clusterDNSIP)
		if cfg, err := loadAdmin(st); err == nil {
			rep.Nodes = nodeStatuses(ctx, cfg, st)
		}
	}
	return rep, nil
}

// nodeStatuses says how each node is: Ready or why not, and its pods.
func nodeStatuses(ctx context.Context, cfg *rest.Config, st *State) []NodeStatus {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	pods := map[string]int{}
	if list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				pods[p.Spec.NodeName]++
			}
		}
	}
	out := make([]NodeStatus, st.Settings.nodes())
	for i := range out {
		name := nodeName(i)
		ip, podCIDR := nodeAddress(i)
		state := "Ready"
		if err := nodeReadyWith(ctx, cs, name); err != nil {
			state = err.Error()
		}
		out[i] = NodeStatus{Name: name, IP: ip, PodCIDR: podCIDR, State: state, Pods: pods[name]}
	}
	return out
}
