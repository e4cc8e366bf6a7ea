package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateAcceptsTheExamples: every PaddleJob the project ships passes.
func TestValidateAcceptsTheExamples(t *testing.T) {
	files, _ := filepath.Glob("../../examples/jobs/*.yaml")
	samples, _ := filepath.Glob("../../config/samples/seed004/example-*.yaml")
	for _, f := range append(files, samples...) {
		out, _, err := runCLI(t, "", "validate", "-f", f)
		if err != nil || !strings.Contains(out, "is valid") {
			t.Errorf("%s: %v\n%s", f, err, out)
		}
	}
}

// TestValidateSaysWhatTheServerSays: each bad job is refused with the
// message the API server or the operator's webhook gives.
func TestValidateSaysWhatTheServerSays(t *testing.T) {
	const head = "apiVersion: batch.paddlepaddle.org/v1\nkind: PaddleJob\nmetadata:\n  name: %s\nspec:\n"
	worker := func(extra string) string {
		return "  worker:\n    replicas: 2\n    template:\n      spec:\n        containers:\n        - name: paddle\n          image: busybox\n" + extra
	}
	tests := []struct {
		name, manifest string
		want           []string
		warning        string
	}{
		{"an unknown field", "  foo: 1\n" + worker(""), []string{`strict decoding error: unknown field "spec.foo"`}, ""},
		{"an enum", "  intranet: Pod\n" + worker(""), []string{`spec.intranet: Unsupported value: "Pod": supported values: "PodIP", "Service", "Host"`}, ""},
		{"a bound", strings.Replace(worker(""), "replicas: 2", "replicas: 0", 1), []string{"spec.worker.replicas: Invalid value: 0: spec.worker.replicas in body should be greater than or equal to 1"}, ""},
		{"a CEL rule: no worker", "  cleanPodPolicy: Never\n", []string{"is invalid", "worker"}, ""},
		{"a CEL rule: the name", worker(""), []string{"metadata.name must be a DNS-1035 label"}, "Bad_Name"},
		{"the webhook: a reserved name", strings.Replace(worker(""), "name: paddle", "name: wait-for-endpoints", 1),
			[]string{`admission webhook "vpaddlejob.batch.paddlepaddle.org" denied the request`, `spec.worker.template.spec.containers[0].name: Invalid value: "wait-for-endpoints": is reserved`}, ""},
		{"the webhook: a contract variable", worker("          env:\n          - {name: PADDLE_TRAINER_ID, value: \"1\"}\n"),
			[]string{`spec.worker.template.spec.containers[0].env[0].name: Invalid value: "PADDLE_TRAINER_ID": is set by the operator`}, ""},
		{"an image", strings.Replace(worker(""), "image: busybox", "image: Bad Image", 1),
			[]string{`spec.worker.template.spec.containers[0].image: Invalid value: "Bad Image": an image reference has no spaces`}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.warning
			if name == "" {
				name = "job"
			}
			manifest := strings.Replace(head, "%s", name, 1) + tc.manifest
			out, _, err := runCLI(t, manifest, "validate", "-f", "-")
			if err == nil {
				t.Fatalf("valid:\n%s\n%s", manifest, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s\nwant it to say %q", out, w)
				}
			}
		})
	}
	// A warning the webhook gives is shown, and the job is valid.
	out, errOut, err := runCLI(t, strings.Replace(head, "%s", "job", 1)+"  cleanPolicy: Never\n"+worker(""), "validate", "-f", "-")
	if err != nil || !strings.Contains(errOut, "Warning: spec.cleanPolicy is deprecated") || !strings.Contains(out, "PaddleJob job is valid") {
		t.Errorf("deprecated field: %v\n%s%s", err, out, errOut)
	}
}
