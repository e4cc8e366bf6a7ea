package launcher

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

type jobParallelism int

func (n jobParallelism) JobPods(context.Context, string, string) ([]corev1.Pod, error) {
	return nil, nil
}

func (n jobParallelism) JobParallelism(context.Context, string, string) (int, error) {
	return int(n), nil
}

func TestRunsAlone(t *testing.T) {
	tests := []struct {
		name      string
		mode      Mode
		noPServer bool
		env       map[string]string
		override  int
		jobPods   int
		want      bool
		wantErr   string
	}{
		{name: "three-node Job", env: threeNodeJobEnv, want: false},
		{name: "three-node Job, legacy", mode: ModeLegacyFlags, env: threeNodeJobEnv, want: false},
		{name: "--no-pserver", noPServer: true, env: threeNodeJobEnv, want: true},
		{name: "--no-pserver, legacy", mode: ModeLegacyFlags, noPServer: true, env: threeNodeJobEnv, want: true},
		{name: "single-node Job: no variables", env: map[string]string{}, want: true},
		{name: "single-node Job: no variables, legacy", mode: ModeLegacyFlags, env: map[string]string{}, want: true},
		{name: "one-pod Job without a port", env: map[string]string{"JOB_NAME": "q"}, jobPods: 1, want: true},
		{name: "one-pod Job without a port, legacy", mode: ModeLegacyFlags, env: map[string]string{"JOB_NAME": "q"}, jobPods: 1, want: true},
		{name: "PADDLE_PARALLELISM=1 without a port", env: map[string]string{"JOB_NAME": "q"}, override: 1, jobPods: 5, want: true},
		{name: "PADDLE_PARALLELISM=1 without a port, legacy", mode: ModeLegacyFlags, env: map[string]string{"JOB_NAME": "q"}, override: 1, jobPods: 5, want: true},
		{name: "three-pod Job without a port: pservers on the default port", env: map[string]string{"JOB_NAME": "q"}, jobPods: 3, want: false},
		{name: "three-pod Job without a port, legacy", mode: ModeLegacyFlags, env: map[string]string{"JOB_NAME": "q"}, jobPods: 3,
			wantErr: "CONF_PADDLE_PORT is not set but job q runs 3 pods"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Mode: tt.mode, NoPServer: tt.noPServer, cluster: jobParallelism(tt.jobPods), Stderr: &bytes.Buffer{}}
			env := ReadEnv(func(k string) string { return tt.env[k] })
			got, _, err := runsAlone(context.Background(), &opts, env, tt.override)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("runsAlone() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("runsAlone() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// A single-node Job: no job variables and no cluster; the trainer runs with the extra
// arguments alone, logging to the working directory.
func TestLaunchSingleNodeWithoutCluster(t *testing.T) {
	opts := DefaultOptions()
	opts.Mode = ModeLegacyFlags
	opts.WorkDir = t.TempDir()
	opts.TrainerCmd = `sh -c 'echo trainer "$@"' trainer`
	opts.ExtraArgs = []string{"--config=trainer_config.lr.py", "--save_dir=./output"}
	opts.Getenv = func(string) string { return "" }
	var stdout, stderr bytes.Buffer
	opts.Stdout, opts.Stderr = &stdout, &stderr
	if err := Run(context.Background(), opts); err != nil {
		t.Fatalf("Run() = %v\nstderr:\n%s", err, &stderr)
	}
	if got, want := readFile(t, filepath.Join(opts.WorkDir, "train.log")), "trainer --config=trainer_config.lr.py --save_dir=./output\n"; got != want {
		t.Errorf("train.log = %q, want %q", got, want)
	}
	if got, want := stdout.String(), "[trainer] trainer --config=trainer_config.lr.py --save_dir=./output\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
}

func TestLaunchReportsEnvironmentErrors(t *testing.T) {
	opts := DefaultOptions()
	opts.Mode = ModeLegacyFlags
	opts.WorkDir = t.TempDir()
	env := map[string]string{"JOB_NAME": "j", "CONF_PADDLE_PORT": "7164", "CONF_PADDLE_NIC": "eth0"}
	opts.Getenv = func(k string) string { return env[k] }
	opts.Stderr = &bytes.Buffer{}
	err := Run(context.Background(), opts)
	for _, want := range []string{"JOB_PATH is not set", "CONF_PADDLE_PORTS_NUM is not set", "CONF_PADDLE_PORTS_NUM_SPARSE is not set", "CONF_PADDLE_GRADIENT_NUM is not set"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run() error = %v, want one containing %q", err, want)
		}
	}
}
