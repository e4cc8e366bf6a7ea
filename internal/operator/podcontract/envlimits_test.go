package podcontract

import (
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// The estimate behind validation's endpoint limits is an upper bound of what a real
// job publishes: measured on real addresses, no list is longer.
func TestEndpointSizesBoundTheRealLists(t *testing.T) {
	job := testutil.MakePaddleJob("wd", "ns").PS(3).Workers(5).Heter(2).WithGloo(1).Obj()
	longest := JobEnv(&job.Spec, LongestTopology(&job.Spec, job.Name))
	topo := Topology{}
	for _, rt := range paddlev1.ReplicaTypes {
		for i := 0; i < job.Spec.ReplicaCount(rt); i++ {
			topo[rt] = append(topo[rt], Member{Host: "10.0.0.1", Ports: DefaultPortRange(job.Spec.Replicas(rt))})
		}
	}
	for name, value := range JobEnv(&job.Spec, topo) {
		if len(value) > len(longest[name]) {
			t.Errorf("%s is %d bytes, over the estimated %d", name, len(value), len(longest[name]))
		}
	}
}
