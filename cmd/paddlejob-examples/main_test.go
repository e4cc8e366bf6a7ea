package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/paddlejob/paddlejob/examples/collective/membershiptest"
)

// runCommand runs a command line in process and returns its exit code and
// output.
func runCommand(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

var finalLine = regexp.MustCompile(`(?m)^final: test_auc=(0\.\d{4}) optimal_auc=(0\.\d{4}) passes=(\d+) model=(\S+)$`)

func TestGenData(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, args ...string) []byte {
		t.Helper()
		path := filepath.Join(dir, name)
		if code, _, stderr := runCommand(t, append([]string{"gen-data", "--out", path}, args...)...); code != 0 {
			t.Fatalf("gen-data %q: exit %d: %s", args, code, stderr)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	a := gen("a", "--rows", "300", "--seed", "5")
	tests := []struct {
		name string
		data []byte
		same bool
	}{
		{"same seed", gen("b", "--rows", "300", "--seed", "5"), true},
		{"other seed", gen("c", "--rows", "300", "--seed", "6"), false},
		{"test split", gen("d", "--rows", "300", "--seed", "5", "--test"), false},
	}
	for _, tt := range tests {
		if bytes.Equal(a, tt.data) != tt.same {
			t.Errorf("%s: byte-identical %v, want %v", tt.name, !tt.same, tt.same)
		}
	}
	if lines := bytes.Count(a, []byte("\n")); lines != 300 {
		t.Errorf("%d lines, want 300", lines)
	}
	shard := gen("shard", "--rows", "300", "--seed", "5", "--trainers", "3", "--trainer-id", "1")
	lines := strings.Split(string(a), "\n")
	if want := lines[1] + "\n" + lines[4] + "\n"; !strings.HasPrefix(string(shard), want) || bytes.Count(shard, []byte("\n")) != 100 {
		t.Errorf("shard 1 of 3 does not hold rows 1, 4, ...")
	}
}

func TestTrainLocallyWithV1Flags(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "train.txt")
	if code, _, stderr := runCommand(t, "gen-data", "--out", data, "--rows", "4000"); code != 0 {
		t.Fatalf("gen-data: %s", stderr)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCommand(t, "train", "--local=1", "--data="+data, "--save_dir="+out, "--num_passes=2",
		"--test-rows=1000", "--use_gpu=0", "--trainer_count=1", "--nics=eth0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m := finalLine.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no final line in %q", stdout)
	}
	if m[3] != "2" || m[4] != filepath.Join(out, "pass-00001") {
		t.Errorf("final line %q", m[0])
	}
	for _, want := range []string{"ignoring flag --use_gpu=0", "ignoring flag --trainer_count=1", "--nics=eth0: addresses come from", "worker-0: pass 2/2: loss="} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestBadCommandLines(t *testing.T) {
	membership := filepath.Join(t.TempDir(), "paddlejob")
	if err := membershiptest.Publish(membership, "1", []string{"127.0.0.2:6000"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no command", nil, nil, 2, "usage: paddlejob-examples"},
		{"unknown command", nil, []string{"fly"}, 2, `unknown command "fly"`},
		{"no role", nil, []string{"wide-and-deep"}, 2, "PADDLE_TRAINING_ROLE is not set"},
		{"no pservers", map[string]string{"PADDLE_TRAINING_ROLE": "TRAINER"}, []string{"wide-and-deep"}, 2, "PADDLE_PSERVERS_IP_PORT_LIST is empty"},
		{"pserver not listed", map[string]string{
			"PADDLE_TRAINING_ROLE": "PSERVER", "PADDLE_PSERVERS_IP_PORT_LIST": "127.0.0.2:6000",
			"PADDLE_TRAINERS_NUM": "1", "POD_IP": "127.0.0.3", "PADDLE_PORT": "6000",
		}, []string{"wide-and-deep"}, 2, "127.0.0.3:6000 (POD_IP:PADDLE_PORT) is not in PADDLE_PSERVERS_IP_PORT_LIST=127.0.0.2:6000"},
		{"pserver in a collective job", map[string]string{"PADDLE_TRAINING_ROLE": "PSERVER"}, []string{"collective"}, 2, "collective jobs have no parameter servers"},
		{"unreachable pserver", map[string]string{
			"PADDLE_TRAINING_ROLE": "TRAINER", "PADDLE_PSERVERS_IP_PORT_LIST": "127.0.0.1:1",
			"PADDLE_TRAINERS_NUM": "1", "PADDLE_TRAINER_ID": "0",
		}, []string{"wide-and-deep", "--rows=10", "--test-rows=10", "--connect-timeout=200ms"}, 1, "pserver 0 at 127.0.0.1:1 unreachable after 200ms"},
		{"membership directory named but missing", map[string]string{"PADDLEJOB_ENDPOINTS_DIR": "/nonexistent/paddlejob"},
			[]string{"collective"}, 2, "--endpoints-dir /nonexistent/paddlejob: membership: open /nonexistent/paddlejob/PADDLE_TRAINER_ENDPOINTS"},
		{"elastic worker without its endpoint", map[string]string{"PADDLEJOB_ENDPOINTS_DIR": membership},
			[]string{"collective"}, 2, "set POD_IP and PADDLE_PORT, or PADDLE_CURRENT_ENDPOINT"},
		{"bad plan", nil, []string{"train", "--local=1", "--lr=0"}, 2, "learning rate must be positive"},
		{"gen-data without --out", nil, []string{"gen-data"}, 2, "--out is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, name := range []string{"PADDLE_TRAINING_ROLE", "TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINER_ENDPOINTS",
				"PADDLE_TRAINERS_NUM", "TRAINERS", "PADDLE_TRAINER_ID", "TRAINER_ID", "POD_IP", "PADDLE_PORT", "PADDLE_CURRENT_ENDPOINT",
				"PADDLEJOB_ENDPOINTS_DIR"} {
				t.Setenv(name, tt.env[name])
			}
			t.Setenv("PADDLE_OUTPUT_DIR", t.TempDir())
			code, _, stderr := runCommand(t, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.wantCode, tt.wantErr)
			}
		})
	}
}
