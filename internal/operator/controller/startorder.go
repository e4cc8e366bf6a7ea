package controller

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
)

// Start-up order of a parameter-server job: trainers start only once every
// parameter server accepts connections, whatever the program does.
//
// Paddle's trainers connect to the servers in fleet.init_worker(). Paddle 2.x
// waited there until every server listened; Paddle 3.0's wait_server_ready
// returns at once, so an unmodified program whose trainers reach
// init_worker() before a server listens fails or hangs
// (docs/paddle-known-issues.md). The operator orders start-up itself, as
// paddle-operator did with an init container:
//
//   - every server pod (role ps, and heter: trainers send to it) gets a TCP
//     readiness probe on its PADDLE_PORT, where its server listens, unless
//     its template brings readiness probes of its own;
//   - every pod that connects to servers (workers; heter pods, which connect
//     to the parameter servers) waits in the wait init container, and the
//     operator releases it (AnnotationEndpoints) only once the servers it
//     needs are Ready. In Service intranet, where lists are known up front
//     and pods otherwise need no wait, these pods get the wait container too.
//
// The wait needs nothing in the image and no API access; a server's
// readiness is what the kubelet reports.

// serverProbePeriod is how often a server's port is tried: start-up waits
// at most this long past the moment the server listens.
const serverProbePeriod = 1

// probeServer gives a server pod's Paddle container a readiness probe on the
// port its server listens on. A template with a readiness probe of its own
// keeps it, and the pod is not probed by the operator.
func probeServer(spec *corev1.PodSpec, port int32) {
	for _, c := range spec.Containers {
		if c.ReadinessProbe != nil {
			return
		}
	}
	c := paddleContainer(spec)
	if c == nil {
		return
	}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}},
		PeriodSeconds:    serverProbePeriod,
		TimeoutSeconds:   1,
		SuccessThreshold: 1,
		// A server that stopped listening is not waited for again: pods
		// already started keep their connections, and a server failure
		// is the restart policy's to handle.
		FailureThreshold: 3,
	}
}

// paddleContainer is the container that runs Paddle: the one named as the
// project's and paddle-operator's examples name it, else the first.
func paddleContainer(spec *corev1.PodSpec) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == "paddle" {
			return &spec.Containers[i]
		}
	}
	if len(spec.Containers) == 0 {
		return nil
	}
	return &spec.Containers[0]
}

// serversNotReady names, for each role, the server pods that pods of that
// role still wait for: missing, or not Ready. Roles that wait for nothing
// are absent. A server whose fleet.init waits for the trainers to join Gloo
// (podcontract.GlooWaitsForWorkers: at level 2 over files, every server) listens only
// after them: it is waited for only until it runs, and a Paddle 3 trainer
// must wait for it itself (docs/env-contract.md, start-up order).
func serversNotReady(spec *paddlev1.PaddleJobSpec, job string, pods []*corev1.Pod) map[paddlev1.ReplicaType][]string {
	ready := map[string]bool{}
	for _, p := range pods {
		ready[p.Name] = p.DeletionTimestamp == nil && podReady(p)
		if joinsGlooBeforeListening(spec, p) {
			ready[p.Name] = p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning
		}
	}
	out := map[paddlev1.ReplicaType][]string{}
	for _, rt := range paddlev1.ReplicaTypes {
		servers := podcontract.ServersOf(spec, rt)
		if len(servers) == 0 {
			continue
		}
		out[rt] = []string{}
		for _, s := range servers {
			for i := 0; i < spec.ReplicaCount(s); i++ {
				if name := paddlev1.PodName(job, s, i); !ready[name] {
					out[rt] = append(out[rt], name)
				}
			}
		}
	}
	return out
}

// joinsGlooBeforeListening reports whether a server pod waits for the trainers in
// Gloo's rendezvous before it listens (podcontract.GlooWaitsForWorkers).
func joinsGlooBeforeListening(spec *paddlev1.PaddleJobSpec, p *corev1.Pod) bool {
	rt, _, ok := podIndex(p)
	return ok && podcontract.GlooWaitsForWorkers(spec, rt)
}

// releasePods gives every pod that waits for the endpoints version it does
// not have yet, and whose servers are all Ready, that version: its wait init
// container then lets its training containers start.
func (r *PaddleJobReconciler) releasePods(ctx context.Context, job *paddlev1.PaddleJob, pods []*corev1.Pod, version string) error {
	notReady := serversNotReady(&job.Spec, job.Name, pods)
	var release []*corev1.Pod
	for _, p := range pods {
		rt, _, ok := podIndex(p)
		if ok && podcontract.PodWaits(&job.Spec, rt) && len(notReady[rt]) == 0 && waitsForVersion(p, version) {
			release = append(release, p)
		}
	}
	return r.forEach(ctx, release, func(p *corev1.Pod) error {
		patch := client.MergeFrom(p.DeepCopy())
		p = p.DeepCopy()
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[paddlev1.AnnotationEndpoints] = version
		if err := r.Patch(ctx, p, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing pod %s: %w", p.Name, err)
		}
		return nil
	})
}

// waitingForServers names the server pods that pods of the job still wait
// for, for the status: those of the roles with a pod not released yet.
func waitingForServers(job *paddlev1.PaddleJob, pods []*corev1.Pod) []string {
	notReady := serversNotReady(&job.Spec, job.Name, pods)
	seen := map[string]bool{}
	var out []string
	for _, p := range pods {
		rt, _, ok := podIndex(p)
		if !ok || !podcontract.PodWaits(&job.Spec, rt) || !inWaitContainer(p) {
			continue
		}
		for _, name := range notReady[rt] {
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
