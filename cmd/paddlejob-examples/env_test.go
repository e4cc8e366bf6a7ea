package main

import (
	"strings"
	"testing"
)

// fakeEnv is an environment of exactly these variables.
func fakeEnv(vars map[string]string) env {
	return func(name string) string { return vars[name] }
}

func TestCollectiveRank(t *testing.T) {
	eps := "127.0.0.2:6000,127.0.0.3:6000,127.0.0.4:6000"
	tests := []struct {
		name    string
		vars    map[string]string
		want    int
		wantErr string
	}{
		{"nothing set: a lone worker", map[string]string{}, 0, ""},
		{"full contract", map[string]string{
			"PADDLE_TRAINER_ENDPOINTS": eps, "PADDLE_CURRENT_ENDPOINT": "127.0.0.3:6000",
			"PADDLE_TRAINER_ID": "1", "PADDLE_TRAINERS_NUM": "3",
		}, 1, ""},
		{"rank from the current endpoint", map[string]string{
			"PADDLE_TRAINER_ENDPOINTS": eps, "PADDLE_CURRENT_ENDPOINT": "127.0.0.4:6000",
		}, 2, ""},
		{"rank from POD_IP and PADDLE_PORT", map[string]string{
			"PADDLE_TRAINER_ENDPOINTS": eps, "POD_IP": "127.0.0.3", "PADDLE_PORT": "6000",
		}, 1, ""},
		{"seed 002 names", map[string]string{"PADDLE_TRAINER_ENDPOINTS": eps, "TRAINER_ID": "2", "TRAINERS": "3"}, 2, ""},
		{"endpoint of another rank", map[string]string{
			"PADDLE_TRAINER_ENDPOINTS": eps, "PADDLE_CURRENT_ENDPOINT": "127.0.0.2:6000", "PADDLE_TRAINER_ID": "1",
		}, 0, "entry 1 of PADDLE_TRAINER_ENDPOINTS is 127.0.0.3:6000"},
		{"count disagrees", map[string]string{"PADDLE_TRAINER_ENDPOINTS": eps, "PADDLE_TRAINER_ID": "0", "PADDLE_TRAINERS_NUM": "2"}, 0, "lists 3 workers"},
		{"rank out of range", map[string]string{"PADDLE_TRAINER_ENDPOINTS": eps, "PADDLE_TRAINER_ID": "3"}, 0, "rank 3"},
		{"not a number", map[string]string{"PADDLE_TRAINER_ID": "one"}, 0, `PADDLE_TRAINER_ID="one"`},
		{"unknown endpoint", map[string]string{"PADDLE_TRAINER_ENDPOINTS": eps, "PADDLE_CURRENT_ENDPOINT": "127.0.0.9:6000"}, 0, "rank -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := fakeEnv(tt.vars)
			got, err := collectiveRank(e, e.list("PADDLE_TRAINER_ENDPOINTS"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("rank = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestEnvRoleAndTrainers(t *testing.T) {
	tests := []struct {
		name         string
		vars         map[string]string
		wantRole     string
		wantTrainers int
		wantErr      string
	}{
		{"paddle names", map[string]string{"PADDLE_TRAINING_ROLE": "PSERVER", "PADDLE_TRAINERS_NUM": "2"}, "PSERVER", 2, ""},
		{"short names", map[string]string{"TRAINING_ROLE": "trainer", "TRAINERS": "3"}, "TRAINER", 3, ""},
		{"count from the endpoint list", map[string]string{"PADDLE_TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ENDPOINTS": "a:1,b:1"}, "TRAINER", 2, ""},
		{"no role", map[string]string{"PADDLE_TRAINERS_NUM": "2"}, "", 0, "PADDLE_TRAINING_ROLE is not set"},
		{"bad role", map[string]string{"PADDLE_TRAINING_ROLE": "HETER_TRAINER"}, "", 0, `"HETER_TRAINER": want PSERVER or TRAINER`},
		{"no trainers", map[string]string{"PADDLE_TRAINING_ROLE": "TRAINER"}, "TRAINER", 0, "number of trainers is unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := fakeEnv(tt.vars)
			role, err := e.role()
			var trainers int
			if err == nil {
				trainers, err = e.trainers()
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || role != tt.wantRole || trainers != tt.wantTrainers {
				t.Fatalf("role %q trainers %d (%v), want %q %d", role, trainers, err, tt.wantRole, tt.wantTrainers)
			}
		})
	}
}
