package imagecontext

import (
	"strings"
	"testing"
)

func TestValidateReference(t *testing.T) {
	sha := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		ref         string
		allowDigest bool
		wantErr     string
	}{
		{ref: "paddlepaddle/paddle"},
		{ref: "paddlepaddle/paddle:2.6.1"},
		{ref: "yancey1989/paddle-job"},
		{ref: "paddle"},
		{ref: "localhost:5000/team/paddle:latest"},
		{ref: "registry.example.com/a/b_c__d-e.f:v1.0_rc-1"},
		{ref: "[::1]:5000/paddle:dev"},
		{ref: "paddle@" + sha, allowDigest: true},
		{ref: "paddle:2.6@" + sha, allowDigest: true},
		{ref: "paddle@" + sha, wantErr: "takes a tag, not a digest"},
		{ref: "", wantErr: "--image is required"},
		{ref: "PaddlePaddle/paddle", wantErr: "repository names are lowercase"},
		{ref: "paddle:", wantErr: "tag"},
		{ref: ":tag", wantErr: "the repository name is missing"},
		{ref: "a//b", wantErr: "joined by"},
		{ref: "paddle job", wantErr: "no spaces"},
		{ref: "-paddle", wantErr: "joined by"},
		{ref: "paddle:-tag", wantErr: "tag \"-tag\""},
		{ref: "paddle:" + strings.Repeat("t", 129), wantErr: "up to 128"},
		{ref: strings.Repeat("a", 256), wantErr: "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			err := validateReference("image", tt.ref, tt.allowDigest)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("validateReference(%q) = %v, want nil", tt.ref, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("validateReference(%q) = %v, want an error containing %q", tt.ref, err, tt.wantErr)
			}
		})
	}
}
