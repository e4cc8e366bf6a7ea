package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestProgramModeOf(t *testing.T) {
	for _, tc := range []struct {
		name                string
		files               fstest.MapFS
		collective, server  int
		wantFirstCollective string
	}{
		{name: "a collective program", files: fstest.MapFS{"train.py": {Data: []byte("import paddle.distributed.fleet as fleet\n\nfleet.init(is_collective=True)\n")}},
			collective: 1, wantFirstCollective: "train.py:3: fleet.init(is_collective=True)"},
		{name: "init_parallel_env", files: fstest.MapFS{"src/main.py": {Data: []byte("import paddle.distributed as dist\ndist.init_parallel_env()\n")}},
			collective: 1, wantFirstCollective: "src/main.py:2: dist.init_parallel_env()"},
		{name: "a parameter-server program", files: fstest.MapFS{"train.py": {Data: []byte("fleet.init()\nif fleet.is_server():\n    fleet.init_server()\n    fleet.run_server()\n")}},
			server: 2},
		{name: "comments say nothing", files: fstest.MapFS{"train.py": {Data: []byte("fleet.init()  # not fleet.init(is_collective=True)\n# fleet.run_server()\n")}}},
		{name: "a virtual environment is not the program", files: fstest.MapFS{
			"venv/lib/python3.11/site-packages/paddle/distributed/fleet/fleet.py": {Data: []byte("def init_server(self): pass\n")},
			"train.py": {Data: []byte("fleet.init(is_collective=True)\n")},
		}, collective: 1, wantFirstCollective: "train.py:1: fleet.init(is_collective=True)"},
		{name: "not Python", files: fstest.MapFS{"run.sh": {Data: []byte("python -c 'fleet.run_server()'\n")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := programModeOf(tc.files)
			if err != nil {
				t.Fatal(err)
			}
			if len(ev.collective) != tc.collective || len(ev.server) != tc.server {
				t.Fatalf("collective calls %q, server calls %q; want %d and %d", ev.collective, ev.server, tc.collective, tc.server)
			}
			if tc.wantFirstCollective != "" && ev.collective[0] != tc.wantFirstCollective {
				t.Errorf("first collective call %q, want %q", ev.collective[0], tc.wantFirstCollective)
			}
		})
	}
}

// validate --build-context warns when the program of the job's image and
// the job's mode disagree, and says nothing when they agree, as for the
// examples and paddlejob init's starter (one program for both modes).
func TestValidateWarnsWhenTheProgramAndTheModeDisagree(t *testing.T) {
	const job = "apiVersion: batch.paddlepaddle.org/v1\nkind: PaddleJob\nmetadata:\n  name: mm\nspec:\n%s" +
		"  worker:\n    replicas: 2\n    template:\n      spec:\n        containers:\n        - name: paddle\n          image: team/trainer:v1\n"
	const ps = "  ps:\n    replicas: 1\n    template:\n      spec:\n        containers:\n        - name: paddle\n          image: team/trainer:v1\n"
	context := func(program string) string {
		dir := t.TempDir()
		for name, data := range map[string]string{"Dockerfile": "FROM paddlepaddle/paddle:3.0.0\nCOPY . /app\n", "train.py": program} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	collective := context("import paddle.distributed.fleet as fleet\nfleet.init(is_collective=True)\n")
	server := context("import paddle.distributed.fleet as fleet\nfleet.init()\nif fleet.is_server():\n    fleet.init_server()\n    fleet.run_server()\n")
	starter, err := os.ReadFile("starter/train.py")
	if err != nil {
		t.Fatal(err)
	}
	both := context(string(starter))
	for _, tc := range []struct {
		name, manifest, context string
		want                    []string
	}{
		{name: "a collective program in a job with spec.ps", manifest: strings.Replace(job, "%s", ps, 1), context: collective,
			want: []string{"Warning: PaddleJob mm: the program of build context " + collective + " (image team/trainer:v1) trains collectively (train.py:2: fleet.init(is_collective=True))",
				"but the job has spec.ps", "docs/paddle-known-issues.md#a-collective-program-in-a-parameter-server-job"}},
		{name: "a parameter-server program in a job without spec.ps", manifest: strings.Replace(job, "%s", "", 1), context: server,
			want: []string{"is a parameter-server program (train.py:4: fleet.init_server())", "but the job has no spec.ps", "#a-parameter-server-program-in-a-collective-job"}},
		{name: "a collective program in a collective job", manifest: strings.Replace(job, "%s", "", 1), context: collective},
		{name: "a parameter-server program in a parameter-server job", manifest: strings.Replace(job, "%s", ps, 1), context: server},
		{name: "the starter in a parameter-server job", manifest: strings.Replace(job, "%s", ps, 1), context: both},
		{name: "the starter in a collective job", manifest: strings.Replace(job, "%s", "", 1), context: both},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runCLI(t, tc.manifest, "validate", "-f", "-", "--build-context", tc.context)
			if err != nil || !strings.Contains(out, "is valid") {
				t.Fatalf("validate: %v\n%s%s", err, out, errOut)
			}
			if len(tc.want) == 0 && strings.Contains(errOut, "Warning") {
				t.Errorf("a warning for a program that fits:\n%s", errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr:\n%s\nwant it to say %q", errOut, w)
				}
			}
		})
	}
}

// The examples' programs are found, and fit their jobs.
func TestValidateFindsTheExamplesPrograms(t *testing.T) {
	ps, err := programModeOf(os.DirFS("../../examples/images/demo-wide-and-deep"))
	if err != nil || len(ps.server) == 0 || len(ps.collective) > 0 {
		t.Errorf("the wide & deep example: server calls %q, collective calls %q (%v)", ps.server, ps.collective, err)
	}
	collective, err := programModeOf(os.DirFS("../../examples/images/demo-resnet"))
	if err != nil || len(collective.collective) == 0 || len(collective.server) > 0 {
		t.Errorf("the ResNet example: server calls %q, collective calls %q (%v)", collective.server, collective.collective, err)
	}
	for job, dir := range map[string]string{
		"../../examples/jobs/wide-and-deep.yaml": "../../examples/images/demo-wide-and-deep",
		"../../examples/jobs/resnet.yaml":        "../../examples/images/demo-resnet",
	} {
		out, errOut, err := runCLI(t, "", "validate", "-f", job, "--build-context", dir)
		if err != nil || !strings.Contains(out, "is valid") || strings.Contains(errOut, "the program of build context") {
			t.Errorf("%s with %s: %v\n%s%s", job, dir, err, out, errOut)
		}
	}
}
