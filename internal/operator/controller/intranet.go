package controller

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// Intranet: how a job's pods address each other (spec.intranet), and all
// that follows from it — the pod's network (host network and host ports in
// Host intranet), its POD_IP, whether its port range is its own (recorded in
// the status by the write-ahead step recordHostPorts before the pod
// exists), and whether the endpoints are published only once every pod has
// an IP (PodIP and Host) or up front as DNS names (Service).

// setPodNetwork puts a pod of a Host-intranet job in its node's network
// namespace, and declares its ports (addPorts).
func setPodNetwork(pod *corev1.Pod, hostNetwork bool, ports podcontract.PortRange) {
	if hostNetwork {
		pod.Spec.HostNetwork = true
		if pod.Spec.DNSPolicy == "" {
			pod.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		}
	}
	addPorts(pod, hostNetwork, ports)
}

// addPorts declares the pod's PADDLE_PORT as the named port "paddle" on its
// first container. On the host network every port of the range is declared
// as a host port, so the scheduler never puts the pod beside another pod
// holding one of them.
func addPorts(pod *corev1.Pod, hostNetwork bool, ports podcontract.PortRange) {
	c := &pod.Spec.Containers[0]
	declared := map[int32]bool{}
	named := false
	for _, cs := range pod.Spec.Containers {
		for _, p := range cs.Ports {
			declared[p.ContainerPort] = true
			named = named || p.Name == portName
		}
	}
	for port := ports.First; port <= ports.Last(); port++ {
		if declared[port] {
			continue
		}
		cp := corev1.ContainerPort{ContainerPort: port, Protocol: corev1.ProtocolTCP}
		if port == ports.First && !named {
			cp.Name = portName
		}
		if hostNetwork {
			cp.HostPort = port
		} else if port != ports.First {
			continue
		}
		c.Ports = append(c.Ports, cp)
	}
}

// podPorts is the port range of a pod of the job: the one recorded for it,
// else its role's default range.
func podPorts(job *paddlev1.PaddleJob, rt paddlev1.ReplicaType, index int) podcontract.PortRange {
	if r, ok := recordedHostPorts(job)[paddlev1.PodName(job.Name, rt, index)]; ok {
		return r
	}
	return podcontract.DefaultPortRange(job.Spec.Replicas(rt))
}

// recordedHostPorts are the port ranges a job recorded for its pods (Host
// intranet), by pod name.
func recordedHostPorts(job *paddlev1.PaddleJob) map[string]podcontract.PortRange {
	out := map[string]podcontract.PortRange{}
	for _, h := range job.Status.HostPorts {
		if r, err := podcontract.ParsePortRange(h.Ports); err == nil {
			out[h.Pod] = r
		}
	}
	return out
}

// ensureHostPorts gives every pod of a Host-intranet job, whose pods share
// their node's address, a range of its own among all live pods, before the
// pods exist (elsewhere every pod has an address of its own and its role's
// default range): the job keeps them while
// it is suspended and its recreated pods get them back. It returns the job
// with its ranges recorded (recordHostPorts); nil on a conflict; the job as
// it was with an error (no free range, a failed write).
func (r *PaddleJobReconciler) ensureHostPorts(ctx context.Context, job *paddlev1.PaddleJob) (*paddlev1.PaddleJob, error) {
	if !podcontract.OnHostNetwork(&job.Spec) {
		return job, nil
	}
	have := recordedHostPorts(job)
	want := map[paddlev1.ReplicaType][]types.NamespacedName{}
	for _, rt := range paddlev1.ReplicaTypes {
		for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
			if name := paddlev1.PodName(job.Name, rt, i); have[name] == (podcontract.PortRange{}) {
				want[rt] = append(want[rt], types.NamespacedName{Namespace: job.Namespace, Name: name})
			}
		}
	}
	if len(want) == 0 {
		return job, nil
	}
	live, err := r.liveHostPorts(ctx)
	if err != nil {
		return job, err
	}
	st := *job.Status.DeepCopy()
	var allocated []types.NamespacedName
	for _, rt := range paddlev1.ReplicaTypes {
		if len(want[rt]) == 0 {
			continue
		}
		got, err := r.hostPorts.allocate(live, want[rt], podcontract.PortsPerPod(job.Spec.Replicas(rt)))
		if err != nil {
			r.releaseAll(allocated)
			return job, err
		}
		for _, key := range want[rt] {
			allocated = append(allocated, key)
			st.HostPorts = append(st.HostPorts, paddlev1.HostPortRange{Pod: key.Name, Ports: got[key].String()})
		}
	}
	sort.Slice(st.HostPorts, func(i, j int) bool { return st.HostPorts[i].Pod < st.HostPorts[j].Pod })
	updated, err := r.recordHostPorts(ctx, job, st)
	if err != nil {
		r.releaseAll(allocated)
		return job, err // the pass goes on to report it in the status
	}
	if updated == nil {
		r.releaseAll(allocated)
	}
	return updated, nil
}

// recordHostPorts is a write-ahead step: the port ranges are in the job's
// status before any pod is created with one, so no other job is handed
// them, whatever happens to this pass.
func (r *PaddleJobReconciler) recordHostPorts(ctx context.Context, job *paddlev1.PaddleJob, st paddlev1.PaddleJobStatus) (*paddlev1.PaddleJob, error) {
	return r.updateStatus(ctx, job, st, "recording the host ports")
}

func (r *PaddleJobReconciler) releaseAll(keys []types.NamespacedName) {
	for _, k := range keys {
		r.hostPorts.release(k)
	}
}

// liveHostPorts are the port ranges recorded by the unfinished jobs of every
// namespace, from the cache.
func (r *PaddleJobReconciler) liveHostPorts(ctx context.Context) (map[types.NamespacedName]podcontract.PortRange, error) {
	var jobs paddlev1.PaddleJobList
	if err := r.List(ctx, &jobs); err != nil {
		return nil, fmt.Errorf("listing PaddleJobs for their host ports: %w", err)
	}
	live := map[types.NamespacedName]podcontract.PortRange{}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if j.Status.IsFinished() {
			continue
		}
		for name, pr := range recordedHostPorts(j) {
			live[types.NamespacedName{Namespace: j.Namespace, Name: name}] = pr
		}
	}
	return live, nil
}

// keepDesiredPorts drops the host port ranges of pods scaled away.
func keepDesiredPorts(job *paddlev1.PaddleJob, ranges []paddlev1.HostPortRange) []paddlev1.HostPortRange {
	var out []paddlev1.HostPortRange
	for _, h := range ranges {
		if desiredPodName(job, h.Pod) {
			out = append(out, h)
		}
	}
	return out
}

// desiredPodName reports whether the spec wants a pod of that name.
func desiredPodName(job *paddlev1.PaddleJob, name string) bool {
	rt, i, err := paddlev1.ParsePodName(job.Name, name)
	return err == nil && i < job.Spec.ReplicaCount(rt)
}

// observedTopology is the job's topology from its live pods: the address and
// recorded ports of pod i of each role i < replicas. Missing pods and pods
// without an address leave an empty host.
func observedTopology(job *paddlev1.PaddleJob, pods []*corev1.Pod) podcontract.Topology {
	topo := podcontract.Topology{}
	for _, rt := range paddlev1.ReplicaTypes {
		if n := job.Spec.ReplicaCount(rt); n > 0 {
			topo[rt] = make([]podcontract.Member, n)
		}
	}
	for _, pod := range pods {
		rt, i, ok := podIndex(pod)
		if !ok || i >= len(topo[rt]) || pod.DeletionTimestamp != nil {
			continue
		}
		ports, err := podcontract.PodPortRange(pod)
		if err != nil {
			continue
		}
		host := pod.Status.PodIP
		if !podcontract.WaitsForEndpoints(&job.Spec) {
			host = podcontract.ServiceHost(job.Name, rt, i)
		}
		topo[rt][i] = podcontract.Member{Host: host, Ports: ports}
	}
	return topo
}

// plannedJobValues are the job variables of a job whose addresses are known
// before any pod exists — Service intranet, where they are DNS names — and
// nil for the intranets whose pods wait for their addresses.
func plannedJobValues(job *paddlev1.PaddleJob) map[string]string {
	if podcontract.WaitsForEndpoints(&job.Spec) {
		return nil
	}
	topo := podcontract.Topology{}
	for _, rt := range paddlev1.ReplicaTypes {
		for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
			topo[rt] = append(topo[rt], podcontract.Member{Host: podcontract.ServiceHost(job.Name, rt, i), Ports: podPorts(job, rt, i)})
		}
	}
	return podcontract.JobEnv(&job.Spec, topo)
}

// publishPlannedEndpoints publishes the job variables of a job whose
// addresses are known up front (Service intranet) before its pods exist:
// pods read them from the ConfigMap.
func (r *PaddleJobReconciler) publishPlannedEndpoints(ctx context.Context, job *paddlev1.PaddleJob) error {
	jobValues := plannedJobValues(job)
	if jobValues == nil {
		return nil
	}
	return r.ensureEndpointsConfigMap(ctx, job, podcontract.EndpointsData(jobValues))
}

// publishEndpoints, in PodIP and Host intranet, publishes the job variables
// once every pod has an address; in every intranet it releases the pods
// waiting for them whose servers are ready (releasePods). It returns the
// pods whose address is still unknown.
func (r *PaddleJobReconciler) publishEndpoints(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod) ([]string, error) {
	if !podcontract.WaitsForEndpoints(&job.Spec) && job.Spec.PS == nil {
		return nil, nil // no pod waits: published up front, nothing to release
	}
	data := plannedJobValues(job)
	if data == nil {
		topo := observedTopology(job, pods)
		if missing := topo.MissingHosts(job.Name); len(missing) > 0 {
			return missing, nil
		}
		data = podcontract.JobEnv(&job.Spec, topo)
	}
	data = podcontract.EndpointsData(data)
	if podcontract.WaitsForEndpoints(&job.Spec) {
		// Service intranet published up front: publishPlannedEndpoints.
		if err := r.ensureEndpointsConfigMap(ctx, job, data); err != nil {
			return nil, err
		}
	}
	return nil, r.releasePods(ctx, job, pods, data[podcontract.VersionKey])
}

// waitsForVersion reports whether a pod waits for an endpoints version it has
// not been given (inWaitContainer). A pod past that container keeps the lists
// it started with and is not patched.
func waitsForVersion(p *corev1.Pod, version string) bool {
	return p.Annotations[paddlev1.AnnotationEndpoints] != version && inWaitContainer(p)
}

// inWaitContainer reports whether a pod has not passed its wait init
// container: an unfinished pod whose wait container has not completed,
// whatever its phase says (the phase lags when the node running the pod
// restarts).
func inWaitContainer(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name == waitContainerName {
			return cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0
		}
	}
	return true // not started yet
}
