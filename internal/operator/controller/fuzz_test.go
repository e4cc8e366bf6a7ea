package controller

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// FuzzPodsAndEnv builds the pods and the environment of jobs of arbitrary
// shapes — replica counts, GPU counts, intranet, name — and checks what
// must hold of every job the schema and validation accept: nothing panics,
// ports are unique and within 1-65535 on any node, names are valid DNS
// names, and no environment string reaches the kernel's 128 KiB limit.
// Its seed corpus (testdata/fuzz/FuzzPodsAndEnv and the f.Add below) runs
// with every `go test`; `make fuzz` explores further.
func FuzzPodsAndEnv(f *testing.F) {
	f.Add("job", uint16(2), uint16(0), uint16(0), int64(0), uint8(0), false)
	f.Add("ps-job", uint16(4), uint16(2), uint16(1), int64(8), uint8(2), true)
	f.Add("a"+fmt.Sprint(1234567890), uint16(300), uint16(3), uint16(0), int64(1024), uint8(1), false)
	f.Add("h", uint16(1), uint16(1), uint16(1), int64(4294967294), uint8(2), false)
	f.Add("long-name-of-exactly-fifty-one-characters-abcdefghi", uint16(7), uint16(0), uint16(0), int64(-3), uint8(1), true)
	f.Fuzz(func(t *testing.T, name string, workers, ps, heter uint16, gpus int64, intranet uint8, gloo bool) {
		// What the schema refuses never reaches the operator.
		if len(name) > paddlev1.MaxJobNameLength || len(validation.IsDNS1035Label(name)) > 0 {
			t.Skip()
		}
		job := fuzzedJob(name, workers, ps, heter, gpus, intranet, gloo)
		if errs := NewValidator(Options{}).Validate(job); len(errs) > 0 {
			return // refused with a message, not built
		}

		// Ports: one range per pod, as the reconciler hands them out.
		host := podcontract.OnHostNetwork(&job.Spec)
		alloc := newHostPortAllocator(podcontract.DefaultHostPortMin, podcontract.DefaultHostPortMax)
		type slot struct {
			rt    paddlev1.ReplicaType
			index int
		}
		var slots []slot
		for _, rt := range paddlev1.ReplicaTypes {
			for i := range job.Spec.ReplicaCount(rt) {
				slots = append(slots, slot{rt, i})
			}
		}
		nodePorts := map[int32]string{} // Host intranet: every pod may share one node
		topo := podcontract.Topology{}
		for _, s := range slots {
			rs := job.Spec.Replicas(s.rt)
			ports := podcontract.DefaultPortRange(rs)
			if host {
				key := types.NamespacedName{Namespace: "ns", Name: paddlev1.PodName(name, s.rt, s.index)}
				got, err := alloc.allocate(nil, []types.NamespacedName{key}, podcontract.PortsPerPod(rs))
				if err != nil {
					return // out of host ports: the job waits with this error, nothing is built
				}
				ports = got[key]
			}
			if ports.First < 1 || ports.Last() > 65535 || ports.ProcessPorts() < 1 {
				t.Fatalf("%s: port range %s with %d process ports", paddlev1.PodName(name, s.rt, s.index), ports, ports.ProcessPorts())
			}
			pod := newPod(job, s.rt, s.index, ports, podOptions{InitImage: DefaultInitImage})
			checkPod(t, pod, ports)
			if host {
				for p := ports.First; p <= ports.Last(); p++ {
					if other, taken := nodePorts[p]; taken {
						t.Fatalf("port %d of %s is also %s's on the node", p, pod.Name, other)
					}
					nodePorts[p] = pod.Name
				}
			}
			topo[s.rt] = append(topo[s.rt], podcontract.Member{Host: "255.255.255.255", Ports: ports})
		}
		checkJobEnvFitsTheKernel(t, job)
	})
}

// fuzzedJob is the job of one fuzz input: 1 to 200 workers, up to 7
// pservers and, with them, up to 3 heter workers, a GPU limit when gpus is
// not 0, one of the three intranet modes, Gloo or not. Pod building is
// linear in the pods: each run stays small.
func fuzzedJob(name string, workers, ps, heter uint16, gpus int64, intranet uint8, gloo bool) *paddlev1.PaddleJob {
	w := testutil.MakePaddleJob(name, "ns").UID("fuzz-uid").Workers(int32(workers%200) + 1).
		Intranet([]paddlev1.Intranet{paddlev1.IntranetPodIP, paddlev1.IntranetService, paddlev1.IntranetHost}[intranet%3])
	if ps%8 > 0 {
		w = w.PS(int32(ps % 8))
		if heter%4 > 0 {
			w = w.Heter(int32(heter % 4))
		}
	}
	if gloo {
		w = w.WithGloo(1)
	}
	job := w.Obj()
	if gpus != 0 {
		job.Spec.Worker.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{podcontract.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	return job
}

// checkJobEnvFitsTheKernel checks that each job variable, at its longest
// as the ConfigMap publishes it, and each endpoint list in the pods'
// environment fits in the kernel's limit on one environment string.
func checkJobEnvFitsTheKernel(t *testing.T, job *paddlev1.PaddleJob) {
	t.Helper()
	for name, value := range podcontract.JobEnv(&job.Spec, podcontract.LongestTopology(&job.Spec, job.Name)) {
		if _, isList := podcontract.ListRoles[name]; !isList {
			if n := len(name) + len(value) + 2; n > podcontract.MaxEnvStringBytes {
				t.Fatalf("%s is %d bytes", name, n)
			}
		}
	}
	env, _ := podcontract.EndpointSizes(&job.Spec, job.Name)
	for _, v := range env {
		if v.Bytes > podcontract.MaxEnvStringBytes {
			t.Fatalf("%s reaches %d bytes in the environment, past the kernel's %d, and Validate let it through", v.Name, v.Bytes, podcontract.MaxEnvStringBytes)
		}
	}
}

// checkPod checks one built pod: DNS-valid names, its ports unique within
// the pod and within 1-65535, every literal variable under the kernel's
// limit.
func checkPod(t *testing.T, pod *corev1.Pod, ports podcontract.PortRange) {
	t.Helper()
	for what, errs := range map[string][]string{
		"pod name":  validation.IsDNS1123Subdomain(pod.Name),
		"hostname":  validation.IsDNS1123Label(pod.Spec.Hostname),
		"subdomain": validation.IsDNS1123Label(pod.Spec.Subdomain),
	} {
		if len(errs) > 0 {
			t.Fatalf("%s of %s: %v", what, pod.Name, errs)
		}
	}
	seen := map[int32]bool{}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, p := range c.Ports {
			if p.ContainerPort < 1 || p.ContainerPort > 65535 || seen[p.ContainerPort] {
				t.Fatalf("%s: container port %d repeated or out of range", pod.Name, p.ContainerPort)
			}
			if p.HostPort != 0 && (p.HostPort < ports.First || p.HostPort > ports.Last()) {
				t.Fatalf("%s: host port %d outside its range %s", pod.Name, p.HostPort, ports)
			}
			seen[p.ContainerPort] = true
		}
		for _, e := range c.Env {
			if n := len(e.Name) + len(e.Value) + 2; n > podcontract.MaxEnvStringBytes {
				t.Fatalf("%s: %s is %d bytes", pod.Name, e.Name, n)
			}
		}
	}
}
