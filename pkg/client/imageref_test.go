package client

import (
	"strings"
	"testing"
)

func TestValidateImage(t *testing.T) {
	good := []string{
		"busybox", "paddlepaddle/paddle:3.0.0", "registry.baidubce.com/paddle-operator/demo-resnet:v1",
		"localhost:5000/my-program:v1", "localhost/trainer", "Registry.Example.com/team/trainer",
		"my_program__x/a-b--c.d:Tag_1.0-rc", "busybox@sha256:" + strings.Repeat("a", 64),
		"registry.example.com:5000/team/trainer:v1@sha256:" + strings.Repeat("0", 64),
	}
	for _, ref := range good {
		if err := ValidateImage(ref); err != nil {
			t.Errorf("%q: %v", ref, err)
		}
	}
	bad := []struct{ ref, says string }{
		{"", "required"},
		{"Bad Image", "no spaces"},
		{" busybox", "no spaces"},
		{"MyImage:v1", "lowercase"},
		{"team/Trainer", "lowercase"},
		{"trainer:", "tag"},
		{"trainer:-v1", "tag"},
		{"trainer:" + strings.Repeat("x", 129), "tag"},
		{"trainer@sha256:abc", "digest"},
		{"-trainer", "joined by"},
		{"team//trainer", "joined by"},
		{"reg_istry.example.com/trainer", "registry"},
		{":v1", "missing"},
		{strings.Repeat("a", 256), "at most 255"},
	}
	for _, tc := range bad {
		err := ValidateImage(tc.ref)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: error %v, want one saying %q", tc.ref, err, tc.says)
		}
	}
}
