package validation_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestReservedNames(t *testing.T) {
	tests := []struct {
		name string
		edit func(*paddlev1.PaddleJob)
		want []string // substrings of the errors; none: valid
	}{
		{name: "names of the job's own", edit: func(j *paddlev1.PaddleJob) {
			j.Spec.Worker.Template.Spec.Volumes = append(j.Spec.Worker.Template.Spec.Volumes, testutil.EmptyDir("data"))
		}},
		{name: "a container named as the operator's init container", edit: func(j *paddlev1.PaddleJob) {
			j.Spec.Worker.Template.Spec.Containers[0].Name = paddlev1.ReservedInitContainer
		}, want: []string{`spec.worker.template.spec.containers[0].name: Invalid value: "wait-for-endpoints": is reserved for a container of the operator's; rename the container`}},
		{name: "an init container of that name", edit: func(j *paddlev1.PaddleJob) {
			j.Spec.PS.Template.Spec.InitContainers = append(j.Spec.PS.Template.Spec.InitContainers, j.Spec.PS.Template.Spec.Containers[0])
			j.Spec.PS.Template.Spec.InitContainers[0].Name = paddlev1.ReservedInitContainer
		}, want: []string{`spec.ps.template.spec.initContainers[0].name: Invalid value: "wait-for-endpoints": is reserved`}},
		{name: "a container named as the Gloo store", edit: func(j *paddlev1.PaddleJob) {
			j.Spec.PS.Template.Spec.Containers[0].Name = paddlev1.ReservedGlooStoreContainer
		}, want: []string{`spec.ps.template.spec.containers[0].name: Invalid value: "gloo-store": is reserved for a container of the operator's; rename the container`}},
		{name: "the endpoints volume's name", edit: func(j *paddlev1.PaddleJob) {
			j.Spec.PS.Template.Spec.Volumes = append(j.Spec.PS.Template.Spec.Volumes, testutil.EmptyDir(paddlev1.ReservedVolume))
		}, want: []string{`spec.ps.template.spec.volumes[0].name: Invalid value: "paddlejob-endpoints": is reserved for the job's endpoints; rename the volume`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakePaddleJob("j", "ns").PS(1).Workers(2).Obj()
			tc.edit(job)
			validate(t, job, tc.want...)
		})
	}
}

func TestEtcdEndpoints(t *testing.T) {
	path := "spec.elasticPolicy.etcdEndpoints[0]"
	tests := []struct {
		endpoint string
		want     []string // none: valid
	}{
		{endpoint: "http://etcd.paddle:2379"},
		{endpoint: "http://10.0.0.1:2379/"},
		{endpoint: "https://etcd:2379", want: []string{path, `Invalid value: "https://etcd:2379": must be http://host:port (Paddle's elastic launcher connects to etcd without TLS)`}},
		{endpoint: "etcd:2379", want: []string{path, "must be http://host:port"}},
		{endpoint: "http://etcd", want: []string{path, "must be http://host:port"}},
		{endpoint: "http://user@etcd:2379", want: []string{path, "must be http://host:port"}},
		{endpoint: "http://etcd:2379/v3", want: []string{path, "must be http://host:port"}},
		{endpoint: "http://etcd:0", want: []string{path, "the port must be 1-65535: http://host:port"}},
	}
	for _, tc := range tests {
		t.Run(tc.endpoint, func(t *testing.T) {
			validate(t, testutil.MakePaddleJob("j", "ns").Workers(2).Elastic(1, 3, tc.endpoint).Obj(), tc.want...)
		})
	}
}

func TestMinResources(t *testing.T) {
	tests := []struct {
		name      string
		resources corev1.ResourceList
		want      []string // none: valid
	}{
		{name: "cpu, memory and a GPU", resources: corev1.ResourceList{"cpu": resource.MustParse("4"), "memory": resource.MustParse("8Gi"), "nvidia.com/gpu": resource.MustParse("2")}},
		{name: "none asked", resources: corev1.ResourceList{"cpu": resource.MustParse("0")}},
		{name: "a negative quantity", resources: corev1.ResourceList{"cpu": resource.MustParse("-1")},
			want: []string{`spec.schedulingPolicy.minResources[cpu]: Invalid value: "-1": must be greater than or equal to 0`}},
		{name: "no resource name", resources: corev1.ResourceList{"two cpus": resource.MustParse("2")},
			want: []string{`spec.schedulingPolicy.minResources[two cpus]: Invalid value: "two cpus": not a resource name (cpu, memory, ephemeral-storage, nvidia.com/gpu)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakePaddleJob("j", "ns").Workers(2).SchedulingPolicy(paddlev1.SchedulingPolicy{MinResources: tc.resources}).Obj()
			validate(t, job, tc.want...)
		})
	}
}
