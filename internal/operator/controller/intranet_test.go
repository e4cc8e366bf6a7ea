package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestNewPodNetworking(t *testing.T) {
	tests := []struct {
		name          string
		intranet      paddlev1.Intranet
		wantInit      bool
		wantHostNet   bool
		wantHostPorts int
	}{
		{"PodIP waits for every pod's IP", paddlev1.IntranetPodIP, true, false, 0},
		{"Service knows the names up front", paddlev1.IntranetService, false, false, 0},
		{"Host declares every port of the range as a host port", paddlev1.IntranetHost, true, true, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakePaddleJob("wd", "ns").Workers(1).Intranet(tc.intranet).Obj()
			job.Spec.Worker.Template.Spec.InitContainers = []corev1.Container{{Name: "fetch-data", Image: "busybox"}}
			pod := newPod(job, paddlev1.ReplicaWorker, 0, podcontract.PortRange{First: 24000, Count: 3}, podOptions{InitImage: "busybox:1.36"})

			inits := pod.Spec.InitContainers
			hasWait := len(inits) > 0 && inits[0].Name == waitContainerName
			if hasWait != tc.wantInit {
				t.Fatalf("wait-for-endpoints first init container = %v, want %v (%d init containers)", hasWait, tc.wantInit, len(inits))
			}
			if hasWait {
				w := inits[0]
				if w.Image != "busybox:1.36" || w.SecurityContext == nil || !*w.SecurityContext.RunAsNonRoot ||
					*w.SecurityContext.AllowPrivilegeEscalation || len(w.SecurityContext.Capabilities.Drop) != 1 {
					t.Errorf("wait container is not a least-privilege busybox: %+v", w)
				}
			}
			if pod.Spec.HostNetwork != tc.wantHostNet {
				t.Errorf("hostNetwork = %v", pod.Spec.HostNetwork)
			}
			if tc.wantHostNet && pod.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
				t.Errorf("dnsPolicy = %q", pod.Spec.DNSPolicy)
			}
			ports := pod.Spec.Containers[0].Ports
			if len(ports) == 0 || ports[0].Name != portName || ports[0].ContainerPort != 24000 {
				t.Fatalf("ports = %+v, want the named port %q first", ports, portName)
			}
			hostPorts := 0
			for _, p := range ports {
				if p.HostPort != 0 {
					hostPorts++
				}
			}
			if hostPorts != tc.wantHostPorts {
				t.Errorf("%d host ports, want %d", hostPorts, tc.wantHostPorts)
			}
			// The user's init container and every main container get the contract and the mount.
			for _, c := range append(pod.Spec.InitContainers[len(pod.Spec.InitContainers)-1:], pod.Spec.Containers...) {
				if !hasEnv(c.Env, "PADDLE_TRAINER_ID") || !hasMount(c, podcontract.EndpointsMountPath) {
					t.Errorf("container %s lacks the contract env or the endpoints mount", c.Name)
				}
			}
			if !hasVolume(pod.Spec.Volumes, endpointsVolume) {
				t.Error("no endpoints volume")
			}
		})
	}
}

func TestNewPodKeepsTheUsersPorts(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").Workers(1).Obj()
	job.Spec.Worker.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "paddle", ContainerPort: 9000}}
	pod := newPod(job, paddlev1.ReplicaWorker, 0, podcontract.PortRange{First: 23000, Count: 3}, podOptions{})
	ports := pod.Spec.Containers[0].Ports
	if len(ports) != 2 || ports[1].Name != "" || ports[1].ContainerPort != 23000 {
		t.Errorf("ports = %+v; want the user's named port kept and PADDLE_PORT added unnamed", ports)
	}
}

// intranetJob is a two-worker job on the intranet mode given.
func intranetJob(intranet paddlev1.Intranet) *paddlev1.PaddleJob {
	return testutil.MakePaddleJob("ij", "ns").UID("ij-uid").Workers(2).Intranet(intranet).Obj()
}

// podWithDefaultPorts is a pod of j created earlier with the default port
// range.
func podWithDefaultPorts(j *paddlev1.PaddleJob, i int) *testutil.PodWrapper {
	return testutil.MakePod(j, paddlev1.ReplicaWorker, i).Annotation(paddlev1.AnnotationPorts, "23000-23002")
}

// otherHostJob is a job in another namespace, in phase, that holds the
// host ports 24000-24002.
func otherHostJob(phase paddlev1.PaddleJobPhase) *paddlev1.PaddleJob {
	return testutil.MakePaddleJob("other", "elsewhere").UID("other-uid").Workers(1).Intranet(paddlev1.IntranetHost).
		Status(paddlev1.PaddleJobStatus{Phase: phase, HostPorts: []paddlev1.HostPortRange{{Pod: "other-worker-0", Ports: "24000-24002"}}}).Obj()
}

// intranetEndpoints is the job's endpoints ConfigMap after the pass; nil
// when there is none.
func intranetEndpoints(t *testing.T, got passResult) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	err := got.client.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "ij-endpoints"}, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &cm
}

// hostPortsAre checks that the job recorded exactly the host port ranges
// want ("pod=ports", in order) and created each pod on the host network
// with its recorded ports.
func hostPortsAre(want ...string) func(*testing.T, passResult) {
	return func(t *testing.T, got passResult) {
		var recorded []string
		for _, h := range got.job.Status.HostPorts {
			recorded = append(recorded, h.Pod+"="+h.Ports)
		}
		if !slices.Equal(recorded, want) {
			t.Errorf("recorded host ports %v, want %v", recorded, want)
		}
		for _, w := range want {
			name, ports, _ := strings.Cut(w, "=")
			p := got.pods[name]
			if p == nil || p.Annotations[paddlev1.AnnotationPorts] != ports || !p.Spec.HostNetwork || p.Spec.Containers[0].Ports[0].HostPort != p.Spec.Containers[0].Ports[0].ContainerPort {
				t.Errorf("pod %s not created on the host network with its recorded ports %s: %+v", name, ports, p)
			}
		}
	}
}

// TestHostIntranetPass: on the host network each pod gets a port range no
// running job holds, recorded in the status before the pod is created.
func TestHostIntranetPass(t *testing.T) {
	runPassCases(t, []passCase{
		{
			name:  "Host: the port ranges are recorded before the pods are created with them",
			job:   intranetJob(paddlev1.IntranetHost),
			want:  passWant{created: []string{"ij-worker-0", "ij-worker-1"}, requeue: expectationTimeout},
			check: hostPortsAre("ij-worker-0=24000-24002", "ij-worker-1=24003-24005"),
		},
		{
			name:   "Host: a running job's ranges are not handed out again",
			job:    intranetJob(paddlev1.IntranetHost),
			others: []client.Object{otherHostJob(paddlev1.PaddleJobRunning)},
			want:   passWant{created: []string{"ij-worker-0", "ij-worker-1"}, requeue: expectationTimeout},
			check:  hostPortsAre("ij-worker-0=24003-24005", "ij-worker-1=24006-24008"),
		},
		{
			name:   "Host: a finished job's ranges are free again",
			job:    intranetJob(paddlev1.IntranetHost),
			others: []client.Object{otherHostJob(paddlev1.PaddleJobCompleted)},
			want:   passWant{created: []string{"ij-worker-0", "ij-worker-1"}, requeue: expectationTimeout},
			check:  hostPortsAre("ij-worker-0=24000-24002", "ij-worker-1=24003-24005"),
		},
	})
}

// TestPodIPIntranetPass: the endpoints wait for every pod's IP, then are
// published and the pods released.
func TestPodIPIntranetPass(t *testing.T) {
	runPassCases(t, []passCase{
		{
			name: "PodIP: nothing is published while a pod has no IP",
			job:  intranetJob(paddlev1.IntranetPodIP),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{podWithDefaultPorts(j, 0).Pending("10.0.0.1").Obj(), podWithDefaultPorts(j, 1).Pending("").Obj()}
			},
			want: passWant{phase: paddlev1.PaddleJobStarting,
				conditions: map[string]wantCondition{paddlev1.JobRunning: {metav1.ConditionFalse, ReasonWaitingForPodIPs}}},
			check: func(t *testing.T, got passResult) {
				if cm := intranetEndpoints(t, got); cm != nil {
					t.Errorf("endpoints published before every pod has an IP: %v", cm.Data)
				}
			},
		},
		{
			name: "PodIP: once every pod has an IP the lists are published and the pods released",
			job:  intranetJob(paddlev1.IntranetPodIP),
			pods: func(j *paddlev1.PaddleJob) []*corev1.Pod {
				return []*corev1.Pod{podWithDefaultPorts(j, 0).Pending("10.0.0.1").Obj(), podWithDefaultPorts(j, 1).Pending("10.0.0.2").Obj()}
			},
			want: passWant{phase: paddlev1.PaddleJobStarting},
			check: func(t *testing.T, got passResult) {
				cm := intranetEndpoints(t, got)
				if cm == nil || cm.Data[podcontract.EnvTrainerEndpoints] != "10.0.0.1:23000,10.0.0.2:23000" {
					t.Fatalf("endpoints ConfigMap %v, want the workers' IPs", cm)
				}
				for _, p := range got.pods {
					if p.Annotations[paddlev1.AnnotationEndpoints] != cm.Data[podcontract.VersionKey] {
						t.Errorf("pod %s not released: endpoints annotation %q, want version %q", p.Name, p.Annotations[paddlev1.AnnotationEndpoints], cm.Data[podcontract.VersionKey])
					}
				}
			},
		},
	})
}

// TestServiceIntranetPass: the Service DNS names are known before the
// pods, which start at once.
func TestServiceIntranetPass(t *testing.T) {
	runPassCases(t, []passCase{
		{
			name: "Service: the DNS names are published before the pods, which do not wait",
			job:  intranetJob(paddlev1.IntranetService),
			want: passWant{created: []string{"ij-worker-0", "ij-worker-1"}, requeue: expectationTimeout},
			check: func(t *testing.T, got passResult) {
				if cm := intranetEndpoints(t, got); cm == nil || cm.Data[podcontract.EnvTrainerEndpoints] != "ij-worker-0.ij:23000,ij-worker-1.ij:23000" {
					t.Errorf("endpoints ConfigMap %v, want the workers' DNS names", cm)
				}
				for _, p := range got.pods {
					if len(p.Spec.InitContainers) != 0 || p.Spec.HostNetwork {
						t.Errorf("pod %s: init containers %v, host network %v; want neither", p.Name, p.Spec.InitContainers, p.Spec.HostNetwork)
					}
				}
			},
		},
	})
}

// TestHostPortsNotRecorded covers the passes whose write-ahead record of the
// host ports does not happen: no pod may be created without its range.
func TestHostPortsNotRecorded(t *testing.T) {
	conflict := interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		return apierrors.NewConflict(paddlev1.GroupVersion.WithResource("paddlejobs").GroupResource(), obj.GetName(), errors.New("the job changed"))
	}}
	tests := []struct {
		name       string
		opts       Options
		funcs      interceptor.Funcs
		wantErr    string
		wantReason string // of the Created condition written; "" when nothing is written
	}{
		{
			name:       "no free range left: the job says so and creates nothing",
			opts:       Options{HostPortMin: 24000, HostPortMax: 24004},
			wantErr:    "no free range of 3 host ports left in 24000-24004",
			wantReason: paddlev1.ReasonHostPortsFailed,
		},
		{
			name:    "the job changed meanwhile: the pass returns the conflict, to be retried from the newer job",
			funcs:   conflict,
			wantErr: "the job changed",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakePaddleJob("hp", "ns").UID("hp-uid").Workers(2).Intranet(paddlev1.IntranetHost).Obj()
			f := newFixtureWith(t, tc.opts, tc.funcs, job)
			got := f.reconcile(t, job)
			if (got.err == nil) != (tc.wantErr == "") || (got.err != nil && !strings.Contains(got.err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", got.err, tc.wantErr)
			}
			if len(got.created) != 0 || got.result.RequeueAfter != 0 {
				t.Errorf("created %v, requeue %s; want nothing before the ranges are recorded", got.created, got.result.RequeueAfter)
			}
			if len(got.job.Status.HostPorts) != 0 {
				t.Errorf("host ports %v recorded", got.job.Status.HostPorts)
			}
			c := meta.FindStatusCondition(got.job.Status.Conditions, paddlev1.JobCreated)
			switch {
			case tc.wantReason == "" && c != nil:
				t.Errorf("condition %+v written from a stale job", c)
			case tc.wantReason != "" && (c == nil || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantErr)):
				t.Errorf("Created condition %+v, want %s saying %q", c, tc.wantReason, tc.wantErr)
			}
			// A range handed out but not recorded goes back to the pool.
			if len(f.r.hostPorts.pending) != 0 {
				t.Errorf("ranges %v still held by the allocator", f.r.hostPorts.pending)
			}
		})
	}
}

// The endpoints version reaches every pod that waits for it — whose wait
// init container has not completed, whatever its phase says — and no pod
// past that container is patched.
func TestEndpointsReachEveryWaitingPod(t *testing.T) {
	job := testutil.MakePaddleJob("ep", "ns").UID("ep-uid").Workers(2).Intranet(paddlev1.IntranetPodIP).Obj()
	waitIs := func(state corev1.ContainerState) func(*testutil.PodWrapper) {
		return func(w *testutil.PodWrapper) {
			w.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: waitContainerName, State: state}}
		}
	}
	waitRunning := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waitDone := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	waitFailed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
	tests := []struct {
		name string
		// worker1 shapes the second worker, after its phase and IP are set.
		phase    corev1.PodPhase
		worker1  func(*testutil.PodWrapper)
		released bool
	}{
		{"Pending, not started yet", corev1.PodPending, func(*testutil.PodWrapper) {}, true},
		{"Pending, in its wait container", corev1.PodPending, waitIs(waitRunning), true},
		{"Running as last reported, its wait container running again after a node restart", corev1.PodRunning, waitIs(waitRunning), true},
		{"its wait container failed and is retried", corev1.PodPending, waitIs(waitFailed), true},
		{"Pending past its wait container", corev1.PodPending, waitIs(waitDone), false},
		{"Running past its wait container", corev1.PodRunning, waitIs(waitDone), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			worker0 := testutil.MakePod(job, paddlev1.ReplicaWorker, 0).Annotation(paddlev1.AnnotationPorts, "23000-23002").Pending("10.0.0.1")
			worker1 := testutil.MakePod(job, paddlev1.ReplicaWorker, 1).Annotation(paddlev1.AnnotationPorts, "23000-23002").Pending("10.0.0.2")
			worker1.Status.Phase = tc.phase
			tc.worker1(worker1)
			f := newFixture(t, Options{}, objects(job, worker0.Obj(), worker1.Obj())...)
			before := f.pods(t, "ns")["ep-worker-1"]

			got := f.reconcile(t, job)

			if got.err != nil {
				t.Fatal(got.err)
			}
			var cm corev1.ConfigMap
			if err := f.client.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "ep-endpoints"}, &cm); err != nil {
				t.Fatalf("endpoints not published: %v", err)
			}
			if v := got.pods["ep-worker-0"].Annotations[paddlev1.AnnotationEndpoints]; v != cm.Data[podcontract.VersionKey] {
				t.Errorf("the pending worker 0 has version %q, want %q", v, cm.Data[podcontract.VersionKey])
			}
			after := got.pods["ep-worker-1"]
			v := after.Annotations[paddlev1.AnnotationEndpoints]
			switch {
			case tc.released && v != cm.Data[podcontract.VersionKey]:
				t.Errorf("worker 1 waits with version %q, want %q", v, cm.Data[podcontract.VersionKey])
			case !tc.released && after.ResourceVersion != before.ResourceVersion:
				t.Errorf("worker 1, past its wait container, was patched (version %q)", v)
			}
		})
	}
}

func TestWaitsForVersion(t *testing.T) {
	job := testutil.MakePaddleJob("ep", "ns").Workers(1).Obj()
	pod := func(phase corev1.PodPhase, version string) *testutil.PodWrapper {
		w := testutil.MakePod(job, paddlev1.ReplicaWorker, 0).Annotation(paddlev1.AnnotationEndpoints, version)
		w.Status.Phase = phase
		w.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: waitContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		return w
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"waiting for a newer version", pod(corev1.PodPending, "v1").Obj(), true},
		{"has the version", pod(corev1.PodPending, "v2").Obj(), false},
		{"being deleted", pod(corev1.PodPending, "v1").Terminating().Obj(), false},
		{"failed", pod(corev1.PodFailed, "v1").Obj(), false},
		{"succeeded", pod(corev1.PodSucceeded, "v1").Obj(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := waitsForVersion(tc.pod, "v2"); got != tc.want {
				t.Errorf("waitsForVersion = %v, want %v", got, tc.want)
			}
		})
	}
}
