package main

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseCounts(t *testing.T) {
	got, err := parseCounts("jobs", " 1, 100,,1000 ")
	if err != nil || !reflect.DeepEqual(got, []int{1, 100, 1000}) {
		t.Errorf("got %v, %v", got, err)
	}
	if got, err := parseCounts("jobs", ""); err != nil || got != nil {
		t.Errorf("empty: got %v, %v", got, err)
	}
	for _, bad := range []string{"0", "-3", "ten", "1,x"} {
		if _, err := parseCounts("pods", bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestBuildScenarios(t *testing.T) {
	got := buildScenarios([]int{1, 100}, 2, 2, []int{1000})
	want := []scenario{
		{Name: "1 job × 4 pods", Jobs: 1, PS: 2, Workers: 2},
		{Name: "100 jobs × 4 pods", Jobs: 100, PS: 2, Workers: 2},
		{Name: "1 job × 1000 workers", Jobs: 1, Workers: 1000},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
	if got[1].pods() != 400 || got[2].pods() != 1000 {
		t.Errorf("pods = %d, %d", got[1].pods(), got[2].pods())
	}
}

func TestJobObject(t *testing.T) {
	u, err := jobObject("job-1", "ns", scenario{Jobs: 1, PS: 2, Workers: 3}, "Service", "img")
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "batch.paddlepaddle.org/v1" || u.GetKind() != "PaddleJob" || u.GetName() != "job-1" || u.GetNamespace() != "ns" {
		t.Errorf("meta: %v", u.Object)
	}
	for path, want := range map[string]int64{"ps": 2, "worker": 3} {
		if n, _, _ := unstructured.NestedInt64(u.Object, "spec", path, "replicas"); n != want {
			t.Errorf("spec.%s.replicas = %d, want %d", path, n, want)
		}
	}
	if s, _, _ := unstructured.NestedString(u.Object, "spec", "intranet"); s != "Service" {
		t.Errorf("intranet = %q", s)
	}
	collective, err := jobObject("big", "ns", scenario{Jobs: 1, Workers: 10}, "PodIP", "img")
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(collective.Object, "spec", "ps"); found {
		t.Error("collective job has spec.ps")
	}
}
