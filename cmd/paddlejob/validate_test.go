package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	opvalidation "github.com/paddlejob/paddlejob/internal/operator/validation"
	"github.com/paddlejob/paddlejob/pkg/client"
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
		{"an unknown field", "  foo: 1\n" + worker(""), []string{`paddlejob/job: spec.foo: unknown field "spec.foo"`}, ""},
		{"an enum", "  intranet: Pod\n" + worker(""), []string{`spec.intranet: Unsupported value: "Pod": supported values: "PodIP", "Service", "Host"`}, ""},
		{"a bound", strings.Replace(worker(""), "replicas: 2", "replicas: 0", 1), []string{"spec.worker.replicas: Invalid value: 0: spec.worker.replicas in body should be greater than or equal to 1"}, ""},
		{"a quantity", "  schedulingPolicy:\n    minResources: {cpu: lots}\n" + worker(""),
			[]string{`paddlejob/job: spec.schedulingPolicy.minResources.cpu: Invalid value: "lots": spec.schedulingPolicy.minResources.cpu in body should match`}, ""},
		{"an exit code", strings.Replace(worker(""), "replicas: 2", "replicas: 2\n    restartPolicy: ExitCode\n    retryableExitCodes: [300]", 1),
			[]string{"paddlejob/job: spec.worker.retryableExitCodes[0]: Invalid value: 300: spec.worker.retryableExitCodes[0] in body should be less than or equal to 255"}, ""},
		{"a CEL rule: no worker", "  cleanPodPolicy: Never\n", []string{"is invalid", "worker"}, ""},
		{"a CEL rule on numbers", "  elasticPolicy: {minReplicas: 3, maxReplicas: 2}\n" + worker(""),
			[]string{"paddlejob/job: spec.elasticPolicy: Invalid value: elasticPolicy.minReplicas must not exceed elasticPolicy.maxReplicas"}, ""},
		{"a CEL rule: the name", worker(""), []string{"metadata.name must be a DNS-1035 label"}, "Bad_Name"},
		{"the webhook: a reserved name", strings.Replace(worker(""), "name: paddle", "name: wait-for-endpoints", 1),
			[]string{"PaddleJob job is invalid: 1 problem (1 by the operator's webhook)", `paddlejob/job: spec.worker.template.spec.containers[0].name: Invalid value: "wait-for-endpoints": is reserved`}, ""},
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

// TestValidateListsEveryProblem: a job with two problems of each kind
// (testdata/six-problems.yaml) gets all six, one a line with its field
// path, in the same order on every run, and validate exits 1.
func TestValidateListsEveryProblem(t *testing.T) {
	const job = "paddlejob/six-problems: "
	want := []string{
		"testdata/six-problems.yaml: PaddleJob six-problems is invalid: 6 problems (2 by the schema, 2 by the operator's webhook, 2 in image references)",
		job + `spec.intranet: Unsupported value: "Pod": supported values: "PodIP", "Service", "Host"`,
		job + "spec.worker.replicas: Invalid value: -1: spec.worker.replicas in body should be greater than or equal to 1",
		job + `spec.worker.template.spec.containers[0].env[0].name: Invalid value: "PADDLE_TRAINER_ID": is set by the operator`,
		job + `spec.worker.template.spec.initContainers[0].name: Invalid value: "wait-for-endpoints": is reserved`,
		job + `spec.worker.template.spec.containers[0].image: Invalid value: "paddle paddle:2.6": an image reference has no spaces`,
		job + `spec.worker.template.spec.initContainers[0].image: Invalid value: "registry.example.com/Team/setup:v1": "Team": repository names are lowercase`,
	}
	first, errOut, err := runCLI(t, "", "validate", "-f", "testdata/six-problems.yaml")
	var exit exitError
	if !asExit(err, &exit) || exit.code != 1 {
		t.Errorf("exit: %v, want code 1", err)
	}
	lines := strings.Split(strings.TrimSuffix(first, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), first)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\n%s\nwant it to start %q", i+1, lines[i], w)
		}
	}
	// The API server skips the CRD's rules while the schema finds errors.
	if errOut != assumedSettings(offlineSettings)+"\nNote: paddlejob/six-problems: "+rulesSkipped+"\n" {
		t.Errorf("stderr: %q", errOut)
	}
	// The schema's checks walk maps: their order is validate's own.
	for i := range 20 {
		if out, _, _ := runCLI(t, "", "validate", "-f", "testdata/six-problems.yaml"); out != first {
			t.Fatalf("run %d differs:\n%s\nfrom the first:\n%s", i+2, out, first)
		}
	}
}

// TestValidateGoesOnPastEachJob: the jobs of a manifest come in its order,
// one without a name as the Nth PaddleJob; a job the schema refuses too
// badly to decode says that the webhook and the images were not checked.
func TestValidateGoesOnPastEachJob(t *testing.T) {
	const job = "apiVersion: batch.paddlepaddle.org/v1\nkind: PaddleJob\nmetadata:\n  %s\nspec:\n  worker:\n    replicas: %s\n" +
		"    template:\n      spec:\n        containers:\n        - {name: paddle, image: %s}\n"
	manifest := strings.Join([]string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: skipped\n",
		fmt.Sprintf(job, "name: b", "2", "Bad:Image:v1"),
		fmt.Sprintf(job, "generateName: train-", "2", "busybox"),
		fmt.Sprintf(job, "name: c", `"two"`, "Bad Image"),
		fmt.Sprintf(job, "generateName: eval-", "0", "busybox"),
	}, "---\n")
	out, errOut, err := runCLI(t, manifest, "validate", "-f", "-")
	if err == nil {
		t.Error("valid")
	}
	want := "-: PaddleJob b is invalid: 1 problem (1 in image references)\n" +
		`paddlejob/b: spec.worker.template.spec.containers[0].image: Invalid value: "Bad:Image:v1": ` + client.ValidateImage("Bad:Image:v1").Error() + "\n" +
		"-: PaddleJob #2 is valid (checked offline: the schema, the webhook's rules and the images)\n" +
		"-: PaddleJob c is invalid: 1 problem (1 by the schema)\n" +
		`paddlejob/c: spec.worker.replicas: Invalid value: "string": spec.worker.replicas in body must be of type integer: "string"` + "\n" +
		"-: PaddleJob #4 is invalid: 1 problem (1 by the schema)\n" +
		"paddlejob #4: spec.worker.replicas: Invalid value: 0: spec.worker.replicas in body should be greater than or equal to 1\n"
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	for _, w := range []string{"Note: paddlejob/c: " + rulesSkipped, "Note: paddlejob/c: not checked by the operator's webhook nor for image references"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr:\n%s\nwant it to say %q", errOut, w)
		}
	}
}

// TestValidateServerCausesOnePerLine: --server lists the causes the API
// server refuses a job for as offline validate lists its problems.
func TestValidateServerCausesOnePerLine(t *testing.T) {
	gk := paddlev1.GroupVersion.WithKind("PaddleJob").GroupKind()
	schema := apierrors.NewInvalid(gk, "j", field.ErrorList{
		field.Invalid(field.NewPath("spec", "worker", "replicas"), -1, "should be greater than or equal to 1"),
		field.NotSupported(field.NewPath("spec", "intranet"), "Pod", []string{"PodIP"}),
		field.Invalid(nil, nil, rulesSkipped),
	})
	denied := apierrors.NewInvalid(gk, "j", field.ErrorList{
		field.Invalid(field.NewPath("spec", "worker", "template", "spec", "containers").Index(10).Child("name"), "wait-for-endpoints", "is reserved"),
		field.Invalid(field.NewPath("spec", "worker", "template", "spec", "containers").Index(2).Child("name"), "wait-for-endpoints", "is reserved"),
	})
	denied.ErrStatus.Message = `admission webhook "vpaddlejob.batch.paddlepaddle.org" denied the request: ` + denied.ErrStatus.Message
	tests := []struct {
		name          string
		err           error
		stdout, notes string
	}{
		{"the schema", fmt.Errorf("PaddleJob default/j: %w", schema),
			"job.yaml: PaddleJob j is invalid: 2 problems (2 by the schema)\n" +
				`paddlejob/j: spec.intranet: Unsupported value: "Pod": supported values: "PodIP"` + "\n" +
				"paddlejob/j: spec.worker.replicas: Invalid value: -1: should be greater than or equal to 1\n",
			"Note: paddlejob/j: " + rulesSkipped + "\n"},
		{"the webhook", fmt.Errorf("PaddleJob default/j: %w", denied),
			"job.yaml: PaddleJob j is invalid: 2 problems (2 by the operator's webhook)\n" +
				`paddlejob/j: spec.worker.template.spec.containers[2].name: Invalid value: "wait-for-endpoints": is reserved` + "\n" +
				`paddlejob/j: spec.worker.template.spec.containers[10].name: Invalid value: "wait-for-endpoints": is reserved` + "\n", ""},
		{"unknown fields", apierrors.NewBadRequest(`strict decoding error: unknown field "spec.foo", unknown field "spec.worker.bar"`),
			"job.yaml: PaddleJob j is invalid: 2 problems (2 by the schema)\n" +
				`paddlejob/j: spec.foo: unknown field "spec.foo"` + "\n" +
				`paddlejob/j: spec.worker.bar: unknown field "spec.worker.bar"` + "\n", ""},
		{"a refusal of no field", apierrors.NewAlreadyExists(paddlev1.GroupVersion.WithResource("paddlejobs").GroupResource(), "j"),
			"job.yaml: PaddleJob j is invalid: 1 problem (1 by the API server)\n" +
				`paddlejob/j: paddlejobs.batch.paddlepaddle.org "j" already exists` + "\n", ""},
		{"none", nil, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := serverReport(tc.err)
			if err != nil {
				t.Fatal(err)
			}
			r.name = "j"
			var out, errOut strings.Builder
			if valid := r.print(&out, &errOut, "job.yaml"); valid != (tc.stdout == "") || out.String() != tc.stdout || errOut.String() != tc.notes {
				t.Errorf("valid %t\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", valid, out.String(), tc.stdout, errOut.String(), tc.notes)
			}
		})
	}
	// An error that refuses nothing (no API server answered) is the command's.
	if _, err := serverReport(errors.New("connection refused")); err == nil || err.Error() != "connection refused" {
		t.Errorf("a transport error: %v", err)
	}
}

// TestValidateSurvivesWhatTheSchemaRefuses: the webhook's checks now run on
// jobs the schema refuses, which the API server never hands them: every
// number of an example negative or huge, every string empty, each is
// listed as invalid, without a crash.
func TestValidateSurvivesWhatTheSchemaRefuses(t *testing.T) {
	files, _ := filepath.Glob("../../examples/jobs/*.yaml")
	samples, _ := filepath.Glob("../../config/samples/seed004/example-*.yaml")
	for name, leaf := range map[string]func(any) any{
		"negative numbers": func(x any) any { return ifNumber(x, int64(-1)) },
		"huge numbers":     func(x any) any { return ifNumber(x, int64(1)<<40) },
		"empty strings": func(x any) any {
			if _, ok := x.(string); ok {
				return ""
			}
			return x
		},
	} {
		for _, f := range append(files, samples...) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := kube.DecodeManifests(data)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				for _, k := range []string{"metadata", "spec"} {
					o.Object[k] = eachLeaf(o.Object[k], leaf)
				}
				if r, err := validateOffline(context.Background(), o); err != nil || len(r.problems) == 0 {
					t.Errorf("%s, %s: %v, no problem found", f, name, err)
				}
			}
		}
	}
}

func ifNumber(x, to any) any {
	switch x.(type) {
	case int64, float64:
		return to
	}
	return x
}

// eachLeaf replaces every value of x that is no map or list by fn's.
func eachLeaf(x any, fn func(any) any) any {
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = eachLeaf(e, fn)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = eachLeaf(e, fn)
		}
		return v
	}
	return fn(x)
}

// Offline, the webhook's checks run under settings of the operator's that
// validate cannot see: it says which it assumed, once, on stderr.
func TestValidateSaysWhichSettingsItAssumed(t *testing.T) {
	const defaults = "Note: assumed the operator's default settings (--server checks under the cluster's own): " +
		"no etcd for elastic jobs, progress reports on, default gang scheduler volcano (templates may name volcano or scheduler-plugins-scheduler), Kueue integration on"
	if got := assumedSettings(offlineSettings); got != defaults {
		t.Errorf("assumed settings:\n%s\nwant:\n%s", got, defaults)
	}
	other := opvalidation.Settings{ElasticEtcd: true, IgnoreKueue: true, Gang: podcontract.GangSettings{Default: podcontract.GangNone, SchedulerPluginsName: "coscheduler"}}
	if got, want := assumedSettings(other), "an etcd for elastic jobs, progress reports off, default gang scheduler none (templates may name volcano or coscheduler), Kueue integration off"; !strings.HasSuffix(got, want) {
		t.Errorf("assumed settings:\n%s\nwant it to end %q", got, want)
	}
	_, errOut, _ := runCLI(t, "", "validate", "-f", "testdata/six-problems.yaml")
	if n := strings.Count(errOut, defaults+"\n"); n != 1 || !strings.HasPrefix(errOut, defaults) {
		t.Errorf("stderr says the assumed settings %d times, want once, first:\n%s", n, errOut)
	}
}
