package validation_test

import (
	"strings"
	"testing"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

func TestEndpointLimits(t *testing.T) {
	longName := strings.Repeat("n", paddlev1.MaxJobNameLength)
	tests := []struct {
		name string
		job  *paddlev1.PaddleJob
		// want are substrings of the one error; none: the job is valid.
		want []string
	}{{
		name: "10000 collective workers in PodIP intranet fit: their list goes to the backup file",
		job:  testutil.MakePaddleJob("wide", "").Workers(10000).Obj(),
	}, {
		name: "a parameter-server job's worker list must reach Paddle's launcher in its environment",
		job:  testutil.MakePaddleJob("wide", "").PS(2).Workers(10000).Obj(),
		want: []string{"spec.worker.replicas: Invalid value: 10000", "PADDLE_TRAINERS_ENDPOINTS", "131072", "Paddle's launcher in parameter-server mode reads it only from its environment", "at most 5956 worker pods fit"},
	}, {
		name: "5956 workers of a parameter-server job fit at the longest IPv4 addresses (21 characters each and a comma: 131058 bytes)",
		job:  testutil.MakePaddleJob("wide", "").PS(2).Workers(5956).Obj(),
	}, {
		name: "Service intranet: the workers' DNS names bound the list",
		job:  testutil.MakePaddleJob("wide", "").PS(2).Workers(5000).Intranet(paddlev1.IntranetService).Obj(),
		want: []string{"spec.worker.replicas", "PADDLE_TRAINERS_ENDPOINTS", "131072", "at most 4719 worker pods fit"},
	}, {
		name: "Host intranet, collective: the worker lists stay out of the environment",
		job:  testutil.MakePaddleJob("wide", "").Workers(10000).Intranet(paddlev1.IntranetHost).Obj(),
	}, {
		name: "a pserver list Paddle reads only from the environment cannot exceed the kernel's limit",
		job:  testutil.MakePaddleJob("wide", "").PS(10000).Workers(2).Obj(),
		want: []string{"spec.ps.replicas", "PADDLE_PSERVERS_IP_PORT_LIST", "131072", "Paddle reads it only from the environment", "at most 5956 ps pods"},
	}, {
		name: "heter trainers see the worker list in their environment",
		job:  testutil.MakePaddleJob("ht", "").PS(1).Workers(7000).Heter(1).Obj(),
		want: []string{"spec.worker.replicas", "PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST", "131072"},
	}, {
		name: "Service intranet names of 10000 workers do not fit in the ConfigMap",
		job:  testutil.MakePaddleJob(longName, "").Workers(10000).Intranet(paddlev1.IntranetService).Obj(),
		want: []string{"spec: Invalid value: \"10000 pods\"", "endpoints ConfigMap", "1000000 bytes", "1 MiB"},
	}, {
		name: "Service intranet: 2000 workers with a long name fit",
		job:  testutil.MakePaddleJob(longName, "").Workers(2000).Intranet(paddlev1.IntranetService).Obj(),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { validate(t, tc.job, tc.want...) })
	}
}
