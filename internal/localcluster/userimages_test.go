package localcluster

import "testing"

func TestSameImage(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"paddlepaddle/paddle", "paddlepaddle/paddle:3.0.0", true},
		{"paddlepaddle/paddle", "docker.io/paddlepaddle/paddle", true},
		{"busybox", "docker.io/library/busybox:1.36", true},
		{"registry.baidubce.com/paddle-operator/demo-resnet", "registry.baidubce.com/paddle-operator/demo-resnet:v1", true},
		{"mypaddle/paddle:quickstart", "mypaddle/paddle:other", false},
		{"paddlepaddle/paddle", "paddlepaddle/paddle-extra:v1", false},
		{"my-ctr:v1", "my-ctr:v2", false},
		{"localhost:5000/my-ctr", "localhost:5000/my-ctr:v1", true},
	} {
		if got := sameImage(tc.a, tc.b); got != tc.same {
			t.Errorf("sameImage(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}
