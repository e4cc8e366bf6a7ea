package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

var (
	// wide_and_deep/train.py, started on an output directory holding checkpoints.
	resumedLine      = regexp.MustCompile(`resumed from pass-\d{5} \(test_auc=[0-9.]+\): [^\n]*`)
	resumedModelLine = regexp.MustCompile(`resumed model: trainer=(\d+) test_auc=([0-9.]+)`)
	passLine         = regexp.MustCompile(`(?m)^pass (\d+)/(\d+): train_loss=[0-9.]+ test_auc=([0-9.]+)`)
)

const (
	// resumedAUCTolerance bounds how far the resumed job's final AUC may fall
	// below the checkpoint's: after 3 passes the test AUC is on its plateau,
	// where it moves by about 0.001 from pass to pass either way.
	resumedAUCTolerance = 0.01
	// resumedModelTolerance bounds how far the model a trainer holds after
	// init_worker may be from the checkpoint's: in GEO-SGD the other
	// trainer's first updates may reach it before it evaluates (an untrained
	// model's AUC is about 0.5).
	resumedModelTolerance = 0.005
)

// A wide & deep job started on the output directory of an earlier one
// resumes from its newest complete checkpoint: both trainers skip the passes
// it holds, the model Paddle's servers give the trainers before they train
// is the learned one (not an untrained model, test AUC about 0.5), and the
// job ends near where the first left off. Directories a crashed save leaves
// are not loaded.
func TestWideAndDeepResumesFromItsNewestCheckpoint(t *testing.T) {
	t.Parallel()
	pj := suiteClient
	first := loadJob(t, "examples/jobs/wide-and-deep.yaml")
	first.Name = "wd-first"
	dir := outputDir(t, first)
	withArgs(first, "--passes=3")
	done, logs := runReadingLogs(t, pj, first)
	checkPSJob(t, done, logs)
	for pod, log := range workerLogs(logs) {
		if resumedLine.MatchString(log) {
			t.Errorf("%s resumed on an empty output directory:\n%s", pod, tail(log))
		}
	}
	passes := passLine.FindAllStringSubmatch(logs[paddlev1.PodName(first.Name, paddlev1.ReplicaWorker, 0)], -1)
	if len(passes) != 3 {
		t.Fatalf("the first job's trainer 0 reported passes %v, want 1-3", passes)
	}
	savedAUC := passes[2][3] // as trainer 0 printed it, and its checkpoint holds it

	leaveHalfWrittenCheckpoints(t, dir)

	second := loadJob(t, "examples/jobs/wide-and-deep.yaml")
	second.Name = "wd-second"
	for _, rt := range paddlev1.ReplicaTypes {
		if rs := second.Spec.Replicas(rt); rs != nil {
			for i := range rs.Template.Spec.Volumes {
				if v := &rs.Template.Spec.Volumes[i]; v.HostPath != nil && v.Name == "output" {
					v.HostPath.Path = dir
				}
			}
		}
	}
	withArgs(second, "--passes=5")
	done, logs = runReadingLogs(t, pj, second)
	final := checkPSJob(t, done, logs)
	for pod, log := range workerLogs(logs) {
		_, index := roleOf(t, done, pod)
		m := resumedLine.FindStringSubmatch(log)
		if m == nil {
			t.Errorf("%s did not resume:\n%s", pod, tail(log))
			continue
		}
		if want := "resumed from pass-00002 (test_auc=" + savedAUC + "): skipping passes 1-3, training passes 4-5"; m[0] != want {
			t.Errorf("%s: %q, want %q", pod, m[0], want)
		}
		// The model the trainer holds once Paddle's init_worker is done:
		// trainer 0 pushed it to the new servers, the others pulled it.
		mm := resumedModelLine.FindStringSubmatch(log)
		if mm == nil || atoi(mm[1]) != index {
			t.Errorf("%s reported no resumed model:\n%s", pod, tail(log))
		} else if auc := atof(mm[2]); math.Abs(auc-atof(savedAUC)) > resumedModelTolerance {
			t.Errorf("%s's resumed model has test AUC %.4f, want the checkpoint's %s", pod, auc, savedAUC)
		}
		var trained []int
		for _, p := range passLine.FindAllStringSubmatch(log, -1) {
			trained = append(trained, atoi(p[1]))
		}
		if fmt.Sprint(trained) != "[4 5]" {
			t.Errorf("%s trained passes %v, want [4 5]", pod, trained)
		}
	}
	t.Logf("test AUC %s after 3 passes, %.4f after resuming for passes 4-5", savedAUC, final.AUC)
	if final.AUC < atof(savedAUC)-resumedAUCTolerance {
		t.Errorf("the resumed job ended at test AUC %.4f, more than %.2f below the checkpoint's %s", final.AUC, resumedAUCTolerance, savedAUC)
	}
	for pass := 1; pass <= 5; pass++ {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("pass-%05d", pass-1), "checkpoint.json")); err != nil {
			t.Errorf("no checkpoint of pass %d: %v", pass, err)
		}
	}
}

// leaveHalfWrittenCheckpoints leaves in dir what a crash in the middle of a
// save leaves: the temporary directory the program writes before renaming
// it, and a pass directory without its checkpoint.json (as an older version
// of the program wrote them).
func leaveHalfWrittenCheckpoints(t *testing.T, dir string) {
	t.Helper()
	for _, half := range []string{".pass-00003.tmp", "pass-00009"} {
		if err := os.MkdirAll(filepath.Join(dir, half), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, half, "model.pdparams"), []byte("half written"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
