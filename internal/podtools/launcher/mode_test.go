package launcher

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, s := range []string{"fleet", "legacy-flags"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	for _, s := range []string{"", "legacy", "Fleet"} {
		if _, err := ParseMode(s); err == nil || !strings.Contains(err.Error(), "--mode=") {
			t.Errorf("ParseMode(%q) error = %v, want one naming --mode", s, err)
		}
	}
	if DefaultOptions().Mode != ModeFleet {
		t.Errorf("the default mode is %q, want fleet", DefaultOptions().Mode)
	}
}

// resolveCommandsCase is a mode, the command flags and the arguments after
// --, and the commands resolveCommands must resolve, or its error.
type resolveCommandsCase struct {
	name        string
	mode        Mode
	pserverCmd  string
	trainerCmd  string
	extra       []string
	wantPServer []string
	wantTrainer []string
	wantErr     string
}

// check resolves the case's commands: an error containing wantErr, or the
// pserver and trainer commands wanted.
func (tt resolveCommandsCase) check(t *testing.T) {
	t.Helper()
	got, err := resolveCommands(tt.mode, tt.pserverCmd, tt.trainerCmd, tt.extra)
	if tt.wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Fatalf("resolveCommands() error = %v, want one containing %q", err, tt.wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.pserver, tt.wantPServer) || !reflect.DeepEqual(got.trainer, tt.wantTrainer) {
		t.Errorf("resolveCommands() = pserver %q, trainer %q; want %q, %q", got.pserver, got.trainer, tt.wantPServer, tt.wantTrainer)
	}
}

// TestResolveCommands: the commands each mode resolves for the pservers and
// the trainers from the flags and the arguments after --.
func TestResolveCommands(t *testing.T) {
	for _, tt := range []resolveCommandsCase{
		{
			name:        "fleet: the program after -- serves both roles, arguments unchanged",
			mode:        ModeFleet,
			extra:       []string{"python", "train.py", "--epochs=3", "--port=1", "--trainer_id=9"},
			wantPServer: []string{"python", "train.py", "--epochs=3", "--port=1", "--trainer_id=9"},
			wantTrainer: []string{"python", "train.py", "--epochs=3", "--port=1", "--trainer_id=9"},
		},
		{
			name:        "fleet: --trainer-cmd serves both roles, the arguments after -- follow",
			mode:        ModeFleet,
			trainerCmd:  "python 'my train.py'",
			extra:       []string{"--epochs=3"},
			wantPServer: []string{"python", "my train.py", "--epochs=3"},
			wantTrainer: []string{"python", "my train.py", "--epochs=3"},
		},
		{
			name:        "fleet: both commands",
			mode:        ModeFleet,
			pserverCmd:  "python ps.py",
			trainerCmd:  "python train.py",
			extra:       []string{"--epochs=3"},
			wantPServer: []string{"python", "ps.py", "--epochs=3"},
			wantTrainer: []string{"python", "train.py", "--epochs=3"},
		},
		{
			name:        "fleet: both commands, nothing after --",
			mode:        ModeFleet,
			pserverCmd:  "sleep 60",
			trainerCmd:  "true",
			wantPServer: []string{"sleep", "60"},
			wantTrainer: []string{"true"},
		},
		{
			name:        "legacy: paddle pserver and paddle train",
			mode:        ModeLegacyFlags,
			extra:       []string{"--num_passes=10"},
			wantPServer: []string{"paddle", "pserver"},
			wantTrainer: []string{"paddle", "train"},
		},
		{
			name:        "legacy: own commands",
			mode:        ModeLegacyFlags,
			pserverCmd:  "/opt/paddle/bin/paddle_pserver_main",
			trainerCmd:  `/opt/paddle/bin/paddle_trainer "--use_gpu=0"`,
			wantPServer: []string{"/opt/paddle/bin/paddle_pserver_main"},
			wantTrainer: []string{"/opt/paddle/bin/paddle_trainer", "--use_gpu=0"},
		},
	} {
		t.Run(tt.name, tt.check)
	}
}

// TestResolveCommandsRefuses: no program, a pserver command without a
// trainer command, a blank command or a bad quote is an error naming it.
func TestResolveCommandsRefuses(t *testing.T) {
	for _, tt := range []resolveCommandsCase{
		{
			name:    "fleet: no program",
			mode:    ModeFleet,
			wantErr: "no program to run",
		},
		{
			name:       "fleet: --pserver-cmd alone",
			mode:       ModeFleet,
			pserverCmd: "python ps.py",
			extra:      []string{"python", "train.py"},
			wantErr:    "--pserver-cmd without --trainer-cmd",
		},
		{
			name:       "fleet: a blank command",
			mode:       ModeFleet,
			trainerCmd: "   ",
			wantErr:    "--trainer-cmd: the command is empty",
		},
		{
			name:       "legacy: an unterminated quote",
			mode:       ModeLegacyFlags,
			pserverCmd: "paddle 'pserver",
			wantErr:    "--pserver-cmd:",
		},
	} {
		t.Run(tt.name, tt.check)
	}
}
