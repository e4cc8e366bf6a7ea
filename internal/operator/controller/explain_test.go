package controller

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/operator/podcontract"
	"github.com/paddlejob/paddlejob/internal/paddlefailure"
	"github.com/paddlejob/paddlejob/internal/testutil"
)

// Every container of a job's pods keeps the end of its log when it fails,
// unless its template chose a policy: the operator's own init container,
// the template's init containers and its containers.
func TestPodsKeepTheEndOfTheirLogs(t *testing.T) {
	const file = corev1.TerminationMessageReadFile
	for _, tc := range []struct {
		name     string
		job      *paddlev1.PaddleJob
		rt       paddlev1.ReplicaType
		template corev1.TerminationMessagePolicy
		want     map[string]corev1.TerminationMessagePolicy
	}{
		{name: "a worker of a parameter-server job", job: testutil.MakePaddleJob("j", "ns").PS(1).Workers(1).Obj(), rt: paddlev1.ReplicaWorker,
			want: map[string]corev1.TerminationMessagePolicy{"paddle": corev1.TerminationMessageFallbackToLogsOnError, waitContainerName: corev1.TerminationMessageFallbackToLogsOnError, "setup": corev1.TerminationMessageFallbackToLogsOnError}},
		{name: "a parameter server", job: testutil.MakePaddleJob("j", "ns").PS(1).Workers(1).Obj(), rt: paddlev1.ReplicaPS,
			want: map[string]corev1.TerminationMessagePolicy{"paddle": corev1.TerminationMessageFallbackToLogsOnError, waitContainerName: corev1.TerminationMessageFallbackToLogsOnError, "setup": corev1.TerminationMessageFallbackToLogsOnError}},
		{name: "a template that chose File", job: testutil.MakePaddleJob("j", "ns").Workers(2).Obj(), rt: paddlev1.ReplicaWorker, template: file,
			want: map[string]corev1.TerminationMessagePolicy{"paddle": file, waitContainerName: corev1.TerminationMessageFallbackToLogsOnError, "setup": file}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &tc.job.Spec.Replicas(tc.rt).Template.Spec
			spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox:1.36", TerminationMessagePolicy: tc.template}}
			spec.Containers[0].TerminationMessagePolicy = tc.template
			pod := newPod(tc.job, tc.rt, 0, podcontract.PortRange{First: 23000, Count: 3}, podOptions{InitImage: "busybox:1.36"})
			got := map[string]corev1.TerminationMessagePolicy{}
			for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
				got[c.Name] = c.TerminationMessagePolicy
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("terminationMessagePolicy by container: %v, want %v", got, tc.want)
			}
			if tc.job.Spec.Replicas(tc.rt).Template.Spec.Containers[0].TerminationMessagePolicy != tc.template {
				t.Error("newPod changed the job's template")
			}
		})
	}
}

// capturedLog is a log of a real Paddle failure (internal/paddlefailure/testdata).
func capturedLog(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "paddlefailure", "testdata", "logs", name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestLogSummary(t *testing.T) {
	for _, tc := range []struct {
		name, message, want string
	}{
		{name: "no message", message: "", want: ""},
		{name: "one line", message: "checkpoint directory missing\n", want: ": checkpoint directory missing"},
		{name: "the exception of a traceback", message: capturedLog(t, "missing-module-3.0.0"), want: ": ModuleNotFoundError: No module named 'sklearn'"},
		{name: "a bare exception", message: capturedLog(t, "collective-program-in-ps-job-2.6.2"), want: ": AssertionError"},
		{name: "Paddle's error inside another", message: capturedLog(t, "ps-program-in-collective-job-2.6.2"),
			want: ": NotFoundError: Input id (8506) is not in current rows table. (at /paddle/paddle/phi/core/selected_rows_impl.h:84)"},
		{name: "an exception followed by Paddle's shutdown", message: capturedLog(t, "trainer-before-server-3.0.0"),
			want: ": ValueError: (InvalidArgument) push dense param failed, status[-1]"},
		{name: "no exception: the last line", message: capturedLog(t, "out-of-memory-3.0.0"), want: ": building the model: 20000000 users x 64"},
		{name: "an explanation's words defused", message: "Known failure [x]: a Fix: b", want: ": known failure [x]: a fix: b"},
		{name: "a long line cut", message: "Error: " + strings.Repeat("x", 400), want: ": Error: " + strings.Repeat("x", 128) + " ... (272 more bytes cut)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := logSummary(tc.message, maxExplainedLogLine); got != tc.want {
				t.Errorf("logSummary = %q, want %q", got, tc.want)
			}
		})
	}
}

// A pod that failed as a real Paddle program failed: its message names the
// container, the exit code and the line that says what failed, and explains
// a known failure in words the SDKs parse back; the events that carry it
// keep it whole.
func TestFailureMessagesExplainKnownFailures(t *testing.T) {
	ps := testutil.MakePaddleJob("wide-and-deep", "ns").PS(2).Workers(2).Obj()
	collective := testutil.MakePaddleJob("resnet", "ns").Workers(2).Obj()
	output := testutil.MakePaddleJob("resnet", "ns").Workers(2).Obj()
	output.Spec.Worker.Template.Spec.Volumes = []corev1.Volume{{Name: "output", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/runs"}}}}
	output.Spec.Worker.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "output", MountPath: "/output"}}
	for _, tc := range []struct {
		name   string
		job    *paddlev1.PaddleJob
		rt     paddlev1.ReplicaType
		log    string
		code   int32
		reason string
		want   string // the start of the message
		wantID string
		words  []string
	}{
		{name: "a collective program on a pserver", job: ps, rt: paddlev1.ReplicaPS, log: "collective-program-in-ps-job-3.0.0", code: 1, reason: "Error",
			want: `pod wide-and-deep-ps-0: container "paddle" exited with code 1 (Error): AssertionError. Known failure [collective-program-in-ps-job]: `, wantID: "collective-program-in-ps-job"},
		{name: "a parameter-server program in a collective job", job: collective, rt: paddlev1.ReplicaWorker, log: "ps-program-in-collective-job-3.0.0", code: 1, reason: "Error",
			want: `pod resnet-worker-0: container "paddle" exited with code 1 (Error): TypeError: bool(Tensor) is not supported`, wantID: "ps-program-in-collective-job"},
		{name: "a missing module", job: ps, rt: paddlev1.ReplicaWorker, log: "missing-module-2.6.2", code: 1, reason: "Error",
			want: `pod wide-and-deep-worker-0: container "paddle" exited with code 1 (Error): ModuleNotFoundError: No module named 'sklearn'. Known failure [missing-module]: `, wantID: "missing-module"},
		{name: "a read-only output volume on the local cluster", job: output, rt: paddlev1.ReplicaWorker, log: "read-only-file-system-3.0.0", code: 1, reason: "Error",
			want:   `pod resnet-worker-0: container "paddle" exited with code 1 (Error): OSError: [Errno 30] Read-only file system: '/output/run-1'. Known failure [read-only-file-system]: `,
			wantID: "read-only-file-system", words: []string{"hostPath volume output (/data/runs) at /output", "paddlejob up --host-path-rw /data/runs"}},
		{name: "out of memory", job: ps, rt: paddlev1.ReplicaPS, log: "out-of-memory-3.0.0", code: 137, reason: "OOMKilled",
			want: `pod wide-and-deep-ps-0: container "paddle" exited with code 137 (signal SIGKILL, OOMKilled): building the model`, wantID: "out-of-memory"},
		{name: "a failure nobody explains", job: ps, rt: paddlev1.ReplicaWorker, log: "out-of-memory-3.0.0", code: 2, reason: "Error",
			want: `pod wide-and-deep-worker-0: container "paddle" exited with code 2 (Error): building the model: 20000000 users x 64`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(tc.job, tc.rt, 0, podcontract.PortRange{First: 23000, Count: 3}, podOptions{InitImage: "busybox:1.36"})
			pod.Spec.NodeName = "paddlejob-node"
			pod.Status.Phase = corev1.PodFailed
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "paddle", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: tc.code, Reason: tc.reason, Message: capturedLog(t, tc.log),
			}}}}
			msg := describeFailure(pod)
			if !strings.HasPrefix(msg, tc.want) {
				t.Errorf("message %q\nwant it to start %q", msg, tc.want)
			}
			if strings.Contains(msg, ".. Known failure") {
				t.Errorf("a line ending in a period gets another:\n%s", msg)
			}
			e := paddlefailure.Parse(msg)
			switch {
			case tc.wantID == "" && e != nil:
				t.Errorf("explained as %s, want no explanation", e.ID)
			case tc.wantID != "" && (e == nil || e.ID != tc.wantID):
				t.Errorf("explained as %+v, want %s:\n%s", e, tc.wantID, msg)
			}
			for _, w := range tc.words {
				if !strings.Contains(msg, w) {
					t.Errorf("message does not say %q:\n%s", w, msg)
				}
			}
			// The notes of JobFailed and RestartingJob (status.go, restart.go).
			for _, note := range []string{
				ReasonPodFailed + ": " + msg,
				fmt.Sprintf("restarting all %d pods of the job after %s (restart %d, backoffLimit %d)", 10000, msg, 100, 100),
			} {
				if len(note) > maxEventNote {
					t.Errorf("an event's note of %d bytes would be cut to %d:\n%s", len(note), maxEventNote, note)
				}
			}
		})
	}
}
