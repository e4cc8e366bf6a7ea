package client

import (
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite golden files")

// word2vecJob is the example of the original paddle.job SDK's documentation.
func word2vecJob() TrainingJob {
	return TrainingJob{
		Name: "paddle-job", Namespace: "yanxu", Image: "yancey1989/paddle-job",
		EntryPoint: "python train.py", WorkDir: "/example/word2vec",
		CPU: 3, Memory: "8G", PServers: 3,
		CephFS: &CephFSVolume{Monitors: []string{"172.19.32.166:6789"}},
	}
}

func TestTrainingJobGolden(t *testing.T) {
	job, err := word2vecJob().Build()
	if err != nil {
		t.Fatal(err)
	}
	got, err := yaml.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/word2vec-paddlejob.yaml"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/client -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("PaddleJob of the paddle.job SDK's example differs from %s:\n%s", golden, got)
	}
}

func TestTrainingJobDefaults(t *testing.T) {
	job, err := TrainingJob{Name: "j", Image: "i", EntryPoint: "python train.py", CPU: 1, Memory: "1G", GPU: 2}.Build()
	if err != nil {
		t.Fatal(err)
	}
	if job.Spec.PS.Replicas != 2 || job.Spec.Worker.Replicas != 3 || job.Namespace != "default" {
		t.Errorf("defaults: %d pservers, %d trainers, namespace %q", job.Spec.PS.Replicas, job.Spec.Worker.Replicas, job.Namespace)
	}
	gpu := job.Spec.Worker.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
	if _, onPS := job.Spec.PS.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; gpu.Value() != 2 || onPS {
		t.Errorf("GPUs belong to trainers only: trainer %v, pserver has some: %v", gpu.Value(), onPS)
	}
}

func TestTrainingJobValidation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*TrainingJob)
		field  string
		rule   string
	}{
		{"uppercase name", func(j *TrainingJob) { j.Name = "MyJob" }, "Name", "lowercase"},
		{"name too long", func(j *TrainingJob) { j.Name = strings.Repeat("a", 52) }, "Name", "at most 51"},
		{"memory with an unknown suffix", func(j *TrainingJob) { j.Memory = "12X" }, "Memory", "E, P, T, G, M, K"},
		{"memory without a suffix", func(j *TrainingJob) { j.Memory = "12" }, "Memory", "suffixes"},
		{"zero CPUs", func(j *TrainingJob) { j.CPU = 0 }, "CPU", "at least 1"},
		{"no entry point", func(j *TrainingJob) { j.EntryPoint = " " }, "EntryPoint", "command line"},
		{"unbalanced quote", func(j *TrainingJob) { j.EntryPoint = `python "train.py` }, "EntryPoint", "command line"},
		{"relative workdir", func(j *TrainingJob) { j.WorkDir = "example" }, "WorkDir", "absolute"},
		{"no Ceph monitor", func(j *TrainingJob) { j.CephFS.Monitors = nil }, "CephFS.Monitors", "monitor"},
		{"two volumes at one path", func(j *TrainingJob) {
			j.HostPaths = []HostPathVolume{{Path: "/data", MountPath: "/mnt/cephfs"}}
		}, "HostPaths.MountPath", "another volume"},
		{"negative GPUs", func(j *TrainingJob) { j.GPU = -1 }, "GPU", "negative"},
	}
	for _, tc := range tests {
		j := word2vecJob()
		tc.mutate(&j)
		_, err := j.Build()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Rule, tc.rule) {
			t.Errorf("%s: error %v; want a FieldError on %s saying %q", tc.name, err, tc.field, tc.rule)
		}
	}
}

func TestTrainingJobMemory(t *testing.T) {
	for memory, want := range map[string]string{"8G": "8G", "8Gi": "8Gi", "1500K": "1500k", "512Mi": "512Mi", "7Ei": "7Ei", "1Ki": "1Ki"} {
		j := word2vecJob()
		j.Memory = memory
		job, err := j.Build()
		if err != nil {
			t.Errorf("memory %s: %v", memory, err)
			continue
		}
		if got := job.Spec.Worker.Template.Spec.Containers[0].Resources.Limits.Memory().String(); got != want {
			t.Errorf("memory %s: the pods get %s, want %s", memory, got, want)
		}
	}
	for _, memory := range []string{"8Ei", "8gi", "8GB", "8iG", "0Gi"} {
		j := word2vecJob()
		j.Memory = memory
		if _, err := j.Build(); err == nil || !strings.Contains(err.Error(), "Memory") {
			t.Errorf("memory %s: error %v, want one on Memory", memory, err)
		}
	}
}
