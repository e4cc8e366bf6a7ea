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

func TestResolveCommands(t *testing.T) {
	tests := []struct {
		name        string
		mode        Mode
		pserverCmd  string
		trainerCmd  string
		extra       []string
		wantPServer []string
		wantTrainer []string
		wantErr     string
	}{
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
		{
			name:       "legacy: an unterminated quote",
			mode:       ModeLegacyFlags,
			pserverCmd: "paddle 'pserver",
			wantErr:    "--pserver-cmd:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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
		})
	}
}
