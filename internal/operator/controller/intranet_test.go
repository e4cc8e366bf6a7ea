package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
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
			pod := newPod(job, paddlev1.ReplicaWorker, 0, portRange{24000, 3}, podOptions{InitImage: "busybox:1.36"})

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
				if !hasEnv(c, "PADDLE_TRAINER_ID") || !hasMount(c, endpointsMountPath) {
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
	pod := newPod(job, paddlev1.ReplicaWorker, 0, portRange{23000, 3}, podOptions{})
	ports := pod.Spec.Containers[0].Ports
	if len(ports) != 2 || ports[1].Name != "" || ports[1].ContainerPort != 23000 {
		t.Errorf("ports = %+v; want the user's named port kept and PADDLE_PORT added unnamed", ports)
	}
}
