package client

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

var updateVectors = flag.Bool("update-vectors", false, "write the Go SDK's objects into the expected field of test/vectors/paddlejob (review the diff!)")

// vectorsDir holds the cases the Go and the Python SDK share (test/vectors/README.md).
const vectorsDir = "../../test/vectors/paddlejob"

// vector is one shared case: the paddle.job SDK's parameters, as the Python SDK spells
// them, and the PaddleJob they build or the parameters reported as bad.
type vector struct {
	Description string         `json:"description"`
	Parameters  vectorParams   `json:"parameters"`
	Expected    map[string]any `json:"expected,omitempty"`
	Errors      []string       `json:"errors,omitempty"`
}

type vectorParams struct {
	JobName            string `json:"job_name"`
	RuntimeImage       string `json:"runtime_image"`
	EntryPoint         string `json:"entry_point"`
	CPUNums            *int   `json:"cpu_nums"`
	CPUNum             *int   `json:"cpu_num"`
	Memory             string `json:"memory"`
	PServers           *int   `json:"pservers"`
	Trainers           *int   `json:"trainers"`
	Collective         bool   `json:"collective"`
	GPUNums            *int   `json:"gpu_nums"`
	UseGPU             *bool  `json:"use_gpu"`
	Namespace          string `json:"namespace"`
	TrainerPackagePath string `json:"trainer_package_path"`
	CephFSVolume       *struct {
		MonitorsAddr string `json:"monitors_addr"`
		User         string `json:"user"`
		SecretName   string `json:"secret_name"`
		MountPath    string `json:"mount_path"`
		Path         string `json:"path"`
	} `json:"cephfs_volume"`
	Env                     map[string]string `json:"env"`
	Intranet                string            `json:"intranet"`
	CleanPodPolicy          string            `json:"clean_pod_policy"`
	RestartPolicy           string            `json:"restart_policy"`
	ProgressDeadlineSeconds int64             `json:"progress_deadline_seconds"`
}

// parameterOf names the parameter behind a TrainingJob field, as the Python SDK does.
var parameterOf = map[string]string{
	"Name": "job_name", "Image": "runtime_image", "EntryPoint": "entry_point", "WorkDir": "trainer_package_path",
	"CPU": "cpu_nums", "Memory": "memory", "GPU": "gpu_nums", "PServers": "pservers", "Trainers": "trainers",
	"CephFS.Monitors": "cephfs_volume.monitors_addr", "CephFS.MountPath": "cephfs_volume.mount_path",
	"RestartPolicy": "restart_policy", "ProgressDeadlineSeconds": "progress_deadline_seconds",
}

// trainingJob maps the paddle.job SDK's parameters to the Go SDK's fields; the seed
// example's spellings cpu_num and use_gpu (one GPU) map as in the Python SDK.
func (p vectorParams) trainingJob() TrainingJob {
	deref := func(v *int) int {
		if v == nil {
			return 0
		}
		return *v
	}
	t := TrainingJob{
		Name: p.JobName, Namespace: p.Namespace, Image: p.RuntimeImage, EntryPoint: p.EntryPoint,
		WorkDir: p.TrainerPackagePath, Memory: p.Memory, PServers: deref(p.PServers), Trainers: deref(p.Trainers), Collective: p.Collective,
		CPU: deref(p.CPUNums), GPU: deref(p.GPUNums), Env: p.Env,
		Intranet: paddlev1.Intranet(p.Intranet), CleanPodPolicy: paddlev1.CleanPodPolicy(p.CleanPodPolicy),
		RestartPolicy: paddlev1.RestartPolicy(p.RestartPolicy), ProgressDeadlineSeconds: p.ProgressDeadlineSeconds,
	}
	if p.CPUNums == nil {
		t.CPU = deref(p.CPUNum)
	}
	if p.GPUNums == nil && p.UseGPU != nil && *p.UseGPU {
		t.GPU = 1
	}
	if c := p.CephFSVolume; c != nil {
		t.CephFS = &CephFSVolume{User: c.User, SecretName: c.SecretName, MountPath: c.MountPath, Path: c.Path}
		for _, m := range strings.Split(c.MonitorsAddr, ",") {
			if m = strings.TrimSpace(m); m != "" {
				t.CephFS.Monitors = append(t.CephFS.Monitors, m)
			}
		}
	}
	return t
}

// pruned drops what the API server drops too: nulls and empty maps and lists.
func pruned(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if e = pruned(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(v) == 0 {
			return nil
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = pruned(e)
		}
		return out
	}
	return v
}

func TestSharedVectors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(vectorsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors in %s: %v", vectorsDir, err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var v vector
			dec := json.NewDecoder(strings.NewReader(string(data)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if (v.Expected == nil) == (v.Errors == nil) && !*updateVectors {
				t.Fatalf("%s: a vector holds either expected or errors", file)
			}
			job, err := v.Parameters.trainingJob().Build()
			if v.Errors != nil {
				var got []string
				for _, e := range unjoin(err) {
					var fe *FieldError
					if !errors.As(e, &fe) {
						t.Fatalf("Build error %v is no FieldError", e)
					}
					got = append(got, parameterOf[fe.Field])
				}
				slices.Sort(got)
				want := slices.Sorted(slices.Values(v.Errors))
				if !slices.Equal(got, want) {
					t.Errorf("Build reports bad parameters %v, want %v (error: %v)", got, want, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			b, err := json.Marshal(job)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			got = pruned(got).(map[string]any)
			if *updateVectors {
				// Only expected changes: the parameters stay as written.
				raw := map[string]any{}
				if err := json.Unmarshal(data, &raw); err != nil {
					t.Fatal(err)
				}
				raw["expected"] = got
				out, err := json.MarshalIndent(raw, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, append(out, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := pruned(v.Expected); !reflect.DeepEqual(got, want) {
				gotJSON, _ := json.MarshalIndent(got, "", "  ")
				t.Errorf("Build's PaddleJob differs from the vector's expected object; Build made:\n%s", gotJSON)
			}
		})
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
