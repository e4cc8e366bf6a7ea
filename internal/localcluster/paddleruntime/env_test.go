package paddleruntime

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestEnsureEnvInstallsOnceThenReuses(t *testing.T) {
	base, cache := tempDir(t), tempDir(t)
	python, pipCount := fake{pipOut: "Successfully installed kubernetes-33.1.0", report: "report-env-cp311.json"}.write(t, base)
	req := []byte("# python: 3.11-3.13\nkubernetes==33.1.0\n")
	var log testutil.SyncBuffer
	opts := Options{CacheDir: cache, Python: python, Log: &log}

	env, err := EnsureEnv(context.Background(), opts, "python-sdk", req)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(cache, "python-sdk")
	if !strings.HasPrefix(env.Dir, root+"/python-sdk-py3.11.7-") || env.PaddleVersion != "" {
		t.Errorf("EnsureEnv = %+v; want a venv under %s and no Paddle", env, root)
	}
	if b, err := os.ReadFile(filepath.Join(env.Dir, "paddlejob-requirements.txt")); err != nil || !bytes.Equal(b, req) {
		t.Errorf("the venv does not record the requirements it was installed from: %v", err)
	}
	if !strings.Contains(log.String(), "installing the Python environment python-sdk into "+root) {
		t.Errorf("log:\n%s", log.String())
	}
	again, err := EnsureEnv(context.Background(), opts, "python-sdk", req)
	if err != nil || again.Dir != env.Dir || pipInstalls(t, pipCount) != 1 {
		t.Errorf("second EnsureEnv = %+v, %v after %d pip installs; want the same venv, installed once", again, err, pipInstalls(t, pipCount))
	}
	changed, err := EnsureEnv(context.Background(), opts, "python-sdk", append(req, "six==1.17.0\n"...))
	if err != nil || changed.Dir == env.Dir || pipInstalls(t, pipCount) != 2 {
		t.Errorf("changed requirements: %+v, %v; want a new venv", changed, err)
	}
}

func TestEnsureEnvRefuses(t *testing.T) {
	opts := Options{CacheDir: t.TempDir()}
	for _, tc := range []struct {
		name, req, want string
	}{
		{"Python-SDK", "# python: 3.11-3.13\nsix==1.17.0\n", "environment name"},
		{"paddle-runtime", "# python: 3.11-3.13\nsix==1.17.0\n", "other than paddle-runtime"},
		{"python-sdk", "# python: 3.11-3.13\nsix>=1.17\n", "not an exact pin"},
		{"python-sdk", "six==1.17.0\n", "# python:"},
	} {
		if _, err := EnsureEnv(context.Background(), opts, tc.name, []byte(tc.req)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("EnsureEnv(%q, %q) = %v; want an error saying %q", tc.name, tc.req, err, tc.want)
		}
	}
}
