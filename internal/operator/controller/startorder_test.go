package controller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestServerPodsAreProbedAndTheirClientsWait(t *testing.T) {
	tests := []struct {
		name      string
		job       *paddlev1.PaddleJob
		rt        paddlev1.ReplicaType
		wantProbe bool
		wantWait  bool
	}{
		{"PS: a pserver is probed on its port", testutil.MakePaddleJob("j", "ns").PS(2).Workers(2).Obj(), paddlev1.ReplicaPS, true, true},
		{"PS: a worker waits", testutil.MakePaddleJob("j", "ns").PS(2).Workers(2).Obj(), paddlev1.ReplicaWorker, false, true},
		{"PS in Service intranet: a worker still waits, for the servers", testutil.MakePaddleJob("j", "ns").PS(1).Workers(1).Intranet(paddlev1.IntranetService).Obj(), paddlev1.ReplicaWorker, false, true},
		{"PS in Service intranet: a pserver starts at once", testutil.MakePaddleJob("j", "ns").PS(1).Workers(1).Intranet(paddlev1.IntranetService).Obj(), paddlev1.ReplicaPS, true, false},
		{"heter: a heter trainer is a server and waits for the pservers", testutil.MakePaddleJob("j", "ns").PS(1).Workers(1).Heter(1).Intranet(paddlev1.IntranetService).Obj(), paddlev1.ReplicaHeter, true, true},
		{"collective: no probe, no wait for servers", testutil.MakePaddleJob("j", "ns").Workers(2).Intranet(paddlev1.IntranetService).Obj(), paddlev1.ReplicaWorker, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(tc.job, tc.rt, 0, podcontract.PortRange{First: 23000, Count: 3}, podOptions{InitImage: "busybox:1.36"})
			probe := pod.Spec.Containers[0].ReadinessProbe
			if got := probe != nil; got != tc.wantProbe {
				t.Fatalf("readiness probe %+v, want one: %v", probe, tc.wantProbe)
			}
			if probe != nil && (probe.TCPSocket == nil || probe.TCPSocket.Port != intstr.FromInt32(23000)) {
				t.Errorf("readiness probe %+v, want a TCP probe of PADDLE_PORT 23000", probe)
			}
			waits := slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == waitContainerName })
			if waits != tc.wantWait {
				t.Errorf("wait init container: %v, want %v", waits, tc.wantWait)
			}
		})
	}
}

func TestATemplatesOwnReadinessProbeIsKept(t *testing.T) {
	job := testutil.MakePaddleJob("j", "ns").PS(1).Workers(1).Obj()
	own := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}}}
	job.Spec.PS.Template.Spec.Containers = append(job.Spec.PS.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox", ReadinessProbe: own})
	pod := newPod(job, paddlev1.ReplicaPS, 0, podcontract.PortRange{First: 23000, Count: 3}, podOptions{})
	if p := pod.Spec.Containers[0].ReadinessProbe; p != nil {
		t.Errorf("the operator added %+v beside the template's own probe", p)
	}
	if p := pod.Spec.Containers[1].ReadinessProbe; p != own && (p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/ready") {
		t.Errorf("the template's probe became %+v", p)
	}
}

// The pass releases a waiting pod once the servers it connects to are Ready,
// and says in the status which servers it waits for.
func TestStartOrderPass(t *testing.T) {
	job := testutil.MakePaddleJob("so", "ns").UID("so-uid").PS(2).Workers(2).Obj()
	pod := func(rt paddlev1.ReplicaType, i int, ip string) *testutil.PodWrapper {
		return testutil.MakePod(job, rt, i).Annotation(paddlev1.AnnotationPorts, "23000-23002").Pending(ip)
	}
	running := func(rt paddlev1.ReplicaType, i int, ip string) *testutil.PodWrapper {
		return testutil.MakePod(job, rt, i).Annotation(paddlev1.AnnotationPorts, "23000-23002").Running(ip)
	}
	tests := []struct {
		name         string
		pods         []*corev1.Pod
		wantReleased []string
		wantReason   string
		wantMessage  string
	}{
		{
			name: "every pod has an IP: the pservers are released, the workers wait for them",
			pods: []*corev1.Pod{
				pod(paddlev1.ReplicaPS, 0, "10.0.0.1").Obj(), pod(paddlev1.ReplicaPS, 1, "10.0.0.2").Obj(),
				pod(paddlev1.ReplicaWorker, 0, "10.0.0.3").Obj(), pod(paddlev1.ReplicaWorker, 1, "10.0.0.4").Obj(),
			},
			wantReleased: []string{"so-ps-0", "so-ps-1"},
			wantReason:   ReasonWaitingForServers,
			wantMessage:  "trainers start once every server accepts connections; waiting for so-ps-0, so-ps-1 to be Ready",
		},
		{
			name: "one pserver Ready, one running but not listening yet: the workers still wait",
			pods: []*corev1.Pod{
				running(paddlev1.ReplicaPS, 0, "10.0.0.1").Obj(), running(paddlev1.ReplicaPS, 1, "10.0.0.2").Unready().Obj(),
				pod(paddlev1.ReplicaWorker, 0, "10.0.0.3").Obj(), pod(paddlev1.ReplicaWorker, 1, "10.0.0.4").Obj(),
			},
			wantReleased: []string{"so-ps-0", "so-ps-1"},
			wantReason:   ReasonWaitingForServers,
			wantMessage:  "trainers start once every server accepts connections; waiting for so-ps-1 to be Ready",
		},
		{
			name: "every pserver Ready: the workers are released",
			pods: []*corev1.Pod{
				running(paddlev1.ReplicaPS, 0, "10.0.0.1").Obj(), running(paddlev1.ReplicaPS, 1, "10.0.0.2").Obj(),
				pod(paddlev1.ReplicaWorker, 0, "10.0.0.3").Obj(), pod(paddlev1.ReplicaWorker, 1, "10.0.0.4").Obj(),
			},
			wantReleased: []string{"so-ps-0", "so-ps-1", "so-worker-0", "so-worker-1"},
			wantReason:   ReasonWaitingForPods,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{}, objects(job, tc.pods...)...)
			got := f.reconcile(t, job)
			if got.err != nil {
				t.Fatal(got.err)
			}
			var released []string
			for name, p := range got.pods {
				if p.Annotations[paddlev1.AnnotationEndpoints] != "" {
					released = append(released, name)
				}
			}
			slices.Sort(released)
			if !slices.Equal(released, tc.wantReleased) {
				t.Errorf("released %v, want %v", released, tc.wantReleased)
			}
			c := meta.FindStatusCondition(got.job.Status.Conditions, paddlev1.JobRunning)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.wantReason || (tc.wantMessage != "" && c.Message != tc.wantMessage) {
				t.Errorf("Running condition %+v, want False %s %q", c, tc.wantReason, tc.wantMessage)
			}
		})
	}
}

// With Gloo over the HTTP store the store container serves it and no server
// waits for the trainers: the workers wait for every server, ps-0 like the
// others, until it listens. At level 2 over files every server joins the
// group of all processes before it listens: each is waited for only until
// it runs.
func TestStartOrderWithGloo(t *testing.T) {
	http := testutil.MakePaddleJob("sg", "ns").UID("sg-uid").PS(2).Workers(1).WithGloo(1).Obj()
	files := withGlooDir(testutil.MakePaddleJob("sg", "ns").UID("sg-uid").PS(2).Workers(1)).WithGloo(2).Obj()
	ps := func(job *paddlev1.PaddleJob, i int, ip string) *testutil.PodWrapper {
		return testutil.MakePod(job, paddlev1.ReplicaPS, i).Annotation(paddlev1.AnnotationPorts, "23000-23002").Running(ip)
	}
	pending := func(job *paddlev1.PaddleJob, i int, ip string) *corev1.Pod {
		return testutil.MakePod(job, paddlev1.ReplicaPS, i).Annotation(paddlev1.AnnotationPorts, "23000-23002").Pending(ip).Obj()
	}
	tests := []struct {
		name     string
		job      *paddlev1.PaddleJob
		ps0, ps1 *corev1.Pod
		released bool
	}{
		{"HTTP: ps-0 runs, not listening; ps-1 Ready: waits", http, ps(http, 0, "10.0.0.1").Unready().Obj(), ps(http, 1, "10.0.0.2").Obj(), false},
		{"HTTP: both Ready: released", http, ps(http, 0, "10.0.0.1").Obj(), ps(http, 1, "10.0.0.2").Obj(), true},
		{"files, level 2: both run, not listening: released", files, ps(files, 0, "10.0.0.1").Unready().Obj(), ps(files, 1, "10.0.0.2").Unready().Obj(), true},
		{"files, level 2: ps-0 not running yet: waits", files, pending(files, 0, "10.0.0.1"), ps(files, 1, "10.0.0.2").Unready().Obj(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			worker := testutil.MakePod(tc.job, paddlev1.ReplicaWorker, 0).Annotation(paddlev1.AnnotationPorts, "23000-23002").Pending("10.0.0.3").Obj()
			f := newFixture(t, Options{}, objects(tc.job, tc.ps0, tc.ps1, worker)...)
			got := f.reconcile(t, tc.job)
			if got.err != nil {
				t.Fatal(got.err)
			}
			if released := got.pods["sg-worker-0"].Annotations[paddlev1.AnnotationEndpoints] != ""; released != tc.released {
				t.Errorf("worker released: %v, want %v", released, tc.released)
			}
		})
	}
}
