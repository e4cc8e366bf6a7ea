package node

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
)

// testRuntimes are the releases the local cluster pins, as its image table
// lists them.
func testRuntimes() *PaddleRuntimes {
	rt := func(v string, ps bool) PaddleRuntime {
		return PaddleRuntime{ParameterServer: ps, HostPaths: []string{"/cache/paddle-" + v}, Env: map[string]string{"PATH": "/cache/paddle-" + v + "/bin:/usr/bin"}}
	}
	return &PaddleRuntimes{Default: "3.0.0", Releases: map[string]PaddleRuntime{
		"2.6.2": rt("2.6.2", true), "3.0.0": rt("3.0.0", true), "3.3.1": rt("3.3.1", false),
	}}
}

func TestPaddleReleaseOfTag(t *testing.T) {
	for image, want := range map[string]string{
		"paddlepaddle/paddle:2.6.2":                                       "2.6.2",
		"paddlepaddle/paddle:3.0.0-gpu-cuda11.8-cudnn8.9-trt8.6":          "3.0.0",
		"registry.baidubce.com/paddle-operator/paddle-ubuntu:2.0.0-18.04": "2.0.0",
		"paddlepaddle/paddle:2.6":                                         "2.6",
		"paddlepaddle/paddle:2.6.2rc0":                                    "2.6.2",
		"docker.io/paddlepaddle/paddle:v3.3.1":                            "3.3.1",
		"paddlepaddle/paddle:latest":                                      "",
		"paddlepaddle/paddle":                                             "",
		"paddlepaddle/paddle:latest-gpu":                                  "",
		"registry.baidubce.com/paddle-operator/paddle-base-gpu:cuda10.2-cudnn7-devel-ubuntu18.04": "",
		"registry.baidubce.com/paddle-operator/demo-resnet:v1":                                    "",
		"paddlepaddle/paddle@sha256:0123456789abcdef":                                             "",
		"localhost:5000/paddle:3.3.1":                                                             "3.3.1",
	} {
		if got := paddleReleaseOfTag(image); got != want {
			t.Errorf("paddleReleaseOfTag(%q) = %q; want %q", image, got, want)
		}
	}
}

func TestPaddleReleasePinnedBy(t *testing.T) {
	for run, want := range map[string]string{
		"python3 -m pip install paddlepaddle==2.0.0 -i https://mirror.baidu.com/pypi/simple": "2.0.0",
		"pip install --no-cache-dir paddlepaddle==3.3.1":                                     "3.3.1",
		`pip3 install "paddlepaddle-gpu==2.6.2.post120" -f https://example.com/whl`:          "2.6.2",
		"pip install paddlepaddle==2.6.2 && pip install paddlepaddle==3.0.0":                 "3.0.0", // the last install wins
		"pip install paddlepaddle":                       "",
		"pip install paddlepaddle>=2.6":                  "",
		"pip install scipy opencv-python==4.2.0.32":      "",
		"apt install -y python3 python3-dev python3-pip": "",
		"echo paddlepaddle==2.6.2 > requirements.txt":    "",
	} {
		if got := paddleReleasePinnedBy(run); got != want {
			t.Errorf("paddleReleasePinnedBy(%q) = %q; want %q", run, got, want)
		}
	}
}

func TestSelectPaddleRelease(t *testing.T) {
	rts := testRuntimes()
	tests := []struct {
		asked, want string
		ps          bool
		note        string // part of the note; "" for none
		warning     bool
		problem     string // part of the problem; "" for none
	}{
		{asked: "", want: "3.0.0", ps: true},
		{asked: "2.6.2", want: "2.6.2", ps: true},
		{asked: "3.3.1", want: "3.3.1"},
		{asked: "2.6.1", want: "2.6.2", ps: true, note: "the image asks for Paddle 2.6.1; it runs on 2.6.2, this node's 2.6 release (pinned: 2.6.2, 3.0.0, 3.3.1)"},
		{asked: "2.6", want: "2.6.2", ps: true, note: "it runs on 2.6.2, this node's 2.6 release"},
		{asked: "3.3.0", want: "3.3.1", note: "this node's 3.3 release"},
		// Another minor of a pinned major: the nearest newer, else older, with a warning.
		{asked: "2.0.0", want: "2.6.2", ps: true, warning: true, note: "the image asks for Paddle 2.0.0, which this node does not pin; it runs on 2.6.2, the nearest pinned 2.x release (pinned: 2.6.2, 3.0.0, 3.3.1)"},
		{asked: "3.1.1", want: "3.3.1", warning: true, note: "it runs on 3.3.1, the nearest pinned 3.x release"},
		{asked: "3.2.2", want: "3.3.1", warning: true, note: "it runs on 3.3.1"},
		{asked: "3.4.0", want: "3.3.1", warning: true, note: "it runs on 3.3.1"},
		{asked: "2.7.0", want: "2.6.2", ps: true, warning: true, note: "it runs on 2.6.2"},
		// No release of the major: nothing runs.
		{asked: "1.8.5", problem: "the image asks for Paddle 1.8.5 and this node has no Paddle 1.x runtime, only 2.6.2, 3.0.0, 3.3.1: use an image of one of those (such as paddlepaddle/paddle:3.0.0)"},
		{asked: "4.0.0", problem: "no Paddle 4.x runtime"},
	}
	for _, tt := range tests {
		sel := selectPaddleRelease(rts, tt.asked)
		if sel.Version != tt.want || sel.ParameterServer != tt.ps || sel.Asked != tt.asked {
			t.Errorf("asked %q: runs on %q (parameter server %v); want %q (%v)", tt.asked, sel.Version, sel.ParameterServer, tt.want, tt.ps)
		}
		if (tt.note == "") != (sel.Note == "") || !strings.Contains(sel.Note, tt.note) || sel.NoteIsWarning != tt.warning {
			t.Errorf("asked %q: note %q (warning %v); want one with %q (%v)", tt.asked, sel.Note, sel.NoteIsWarning, tt.note, tt.warning)
		}
		if (tt.problem == "") != (sel.Problem == "") || !strings.Contains(sel.Problem, tt.problem) {
			t.Errorf("asked %q: problem %q; want one with %q", tt.asked, sel.Problem, tt.problem)
		}
		if !reflect.DeepEqual(sel.ParameterServerReleases, []string{"2.6.2", "3.0.0"}) {
			t.Errorf("asked %q: parameter-server releases %v", tt.asked, sel.ParameterServerReleases)
		}
	}
	if sel := selectPaddleRelease(nil, "3.0.0"); !strings.Contains(sel.Problem, "this node has none") {
		t.Errorf("no runtimes: %+v", sel)
	}
}

// writeContext writes a build context holding a Dockerfile.
func writeContext(t *testing.T, dockerfile string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The release an image runs on, whichever way it names it: its tag, its
// Dockerfile's FROM, a pip pin in a RUN, or an example image's tag.
func TestImagesRunOnTheReleaseTheyAskFor(t *testing.T) {
	paddle := ImageEntry{Args: []string{"/bin/bash"}, PaddleRelease: paddleReleaseByTag}
	entries := map[string]ImageEntry{
		"paddlepaddle/paddle": paddle,
		"registry.baidubce.com/paddle-operator/paddle-ubuntu": paddle,
		// paddle-operator's example 1 Dockerfile: Ubuntu, Paddle from pip.
		"example/wide-and-deep": {Context: writeContext(t, "FROM ubuntu:18.04\nRUN apt update && apt install -y python3-pip\n"+
			"RUN python3 -m pip install paddlepaddle==2.0.0 -i https://mirror.baidu.com/pypi/simple\nENTRYPOINT [\"python3\", \"train.py\"]\n")},
		// An example image: its tag may move it to another release.
		"example/resnet": {Context: writeContext(t, "FROM paddlepaddle/paddle:3.0.0\nENV PATH=/opt/tools:$PATH\n"), PaddleRelease: paddleReleaseByTag},
		// FROM one release, pip installs another.
		"custom/repin": {Context: writeContext(t, "FROM paddlepaddle/paddle:3.0.0\nRUN pip install paddlepaddle==3.3.1\n")},
		"custom/old":   {Context: writeContext(t, "FROM paddlepaddle/paddle:1.8.5\n")},
		"busybox":      {Args: []string{"sh"}},
	}
	table, err := newImageTableWithPaddle("images.yaml", entries, testRuntimes())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		image, version, asked, path string
		hostPaths                   []string
		problem                     bool
	}{
		{image: "paddlepaddle/paddle:2.6.2", version: "2.6.2", asked: "2.6.2", path: "/cache/paddle-2.6.2/bin:/usr/bin", hostPaths: []string{"/cache/paddle-2.6.2"}},
		{image: "paddlepaddle/paddle", version: "3.0.0", path: "/cache/paddle-3.0.0/bin:/usr/bin", hostPaths: []string{"/cache/paddle-3.0.0"}},
		{image: "paddlepaddle/paddle:3.1.1", version: "3.3.1", asked: "3.1.1", path: "/cache/paddle-3.3.1/bin:/usr/bin", hostPaths: []string{"/cache/paddle-3.3.1"}},
		{image: "registry.baidubce.com/paddle-operator/paddle-ubuntu:2.0.0-18.04", version: "2.6.2", asked: "2.0.0", path: "/cache/paddle-2.6.2/bin:/usr/bin", hostPaths: []string{"/cache/paddle-2.6.2"}},
		{image: "example/wide-and-deep:v1", version: "2.6.2", asked: "2.0.0", path: "/cache/paddle-2.6.2/bin:/usr/bin", hostPaths: []string{"/cache/paddle-2.6.2"}},
		{image: "example/resnet:v1", version: "3.0.0", asked: "3.0.0", path: "/opt/tools:/cache/paddle-3.0.0/bin:/usr/bin", hostPaths: []string{"/cache/paddle-3.0.0"}},
		{image: "example/resnet:3.3.1", version: "3.3.1", asked: "3.3.1", path: "/opt/tools:/cache/paddle-3.3.1/bin:/usr/bin", hostPaths: []string{"/cache/paddle-3.3.1"}},
		{image: "custom/repin", version: "3.3.1", asked: "3.3.1", path: "/cache/paddle-3.3.1/bin:/usr/bin", hostPaths: []string{"/cache/paddle-3.3.1"}},
		{image: "custom/old", asked: "1.8.5", problem: true},
		{image: "paddlepaddle/paddle:1.8.5", asked: "1.8.5", problem: true},
	}
	for _, tt := range tests {
		e, ok := table.Lookup(tt.image)
		if !ok || e.Paddle == nil {
			t.Errorf("%s: found %v, Paddle %+v", tt.image, ok, e.Paddle)
			continue
		}
		if e.Paddle.Version != tt.version || e.Paddle.Asked != tt.asked || (e.Paddle.Problem != "") != tt.problem {
			t.Errorf("%s: runs on %q, asked %q, problem %q; want %q, %q, problem %v", tt.image, e.Paddle.Version, e.Paddle.Asked, e.Paddle.Problem, tt.version, tt.asked, tt.problem)
		}
		if tt.problem {
			continue
		}
		if e.Env["PATH"] != tt.path || !reflect.DeepEqual(e.HostPaths, tt.hostPaths) {
			t.Errorf("%s: PATH %q, hostPaths %v; want %q, %v", tt.image, e.Env["PATH"], e.HostPaths, tt.path, tt.hostPaths)
		}
	}
	if e, _ := table.Lookup("busybox"); e.Paddle != nil {
		t.Errorf("busybox got a Paddle release: %+v", e.Paddle)
	}
	// The Dockerfile's pip pin replaces the RUN warning: it is understood.
	for _, w := range table.Warnings() {
		if strings.Contains(w, "paddlepaddle==") {
			t.Errorf("warning about a pip pin the node applies: %s", w)
		}
	}
}

func TestImageTableFileListsPaddleRuntimes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "images.yaml")
	data := `paddle:
  default: "3.0.0"
  releases:
    "3.0.0": {parameterServer: true, hostPaths: [/cache/p3], env: {PATH: /cache/p3/bin}}
    "3.3.1": {hostPaths: [/cache/p33], env: {PATH: /cache/p33/bin}}
images:
  paddlepaddle/paddle: {args: [/bin/bash], paddleRelease: tag}
  pinned/image: {command: [python3], paddleRelease: "3.3.1"}
`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	table, err := LoadImageTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := table.Lookup("paddlepaddle/paddle:3.0.0"); e.Paddle == nil || !e.Paddle.ParameterServer || e.Env["PATH"] != "/cache/p3/bin" {
		t.Errorf("paddlepaddle/paddle:3.0.0 = %+v", e)
	}
	if e, _ := table.Lookup("pinned/image:anything"); e.Paddle == nil || e.Paddle.Version != "3.3.1" || e.Paddle.ParameterServer {
		t.Errorf("pinned/image = %+v", e)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("images:\n  x: {command: [a], paddleRelease: newest}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadImageTable(bad); err == nil || !strings.Contains(err.Error(), `paddleRelease "newest": want "tag" or a release such as 3.0.0`) {
		t.Errorf("a bad paddleRelease: %v", err)
	}
}

func TestParameterServerRole(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TRAINING_ROLE": "PSERVER"}, "parameter server"},
		{map[string]string{"PADDLE_TRAINING_ROLE": "PSERVER"}, "parameter server"},
		{map[string]string{"TRAINING_ROLE": "HETER_TRAINER"}, "heter trainer"},
		{map[string]string{"TRAINING_ROLE": "TRAINER", "PADDLE_PSERVERS_IP_PORT_LIST": "10.0.0.1:2000"}, "trainer of a parameter-server job"},
		{map[string]string{"PADDLE_TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ENDPOINTS": "10.0.0.1:2000"}, ""}, // collective
		{map[string]string{}, ""},
	} {
		lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
		if got := parameterServerRole(lookup); got != tt.want {
			t.Errorf("parameterServerRole(%v) = %q; want %q", tt.env, got, tt.want)
		}
	}
}

// paddlePod is a pod of one container of image with env.
func paddlePod(image string, policy corev1.RestartPolicy, env ...corev1.EnvVar) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job-ps-0", UID: "uid-ps"},
		Spec: corev1.PodSpec{
			RestartPolicy: policy,
			Containers:    []corev1.Container{{Name: "paddle", Image: image, Command: []string{"python3", "train.py"}, Env: env}},
		},
	}
}

// A parameter-server job's container on a release without the
// parameter-server runtime ends at once, terminated with a reason and a
// message naming the releases that have it; a collective one runs; a
// release the node cannot provide keeps the container waiting, saying which
// it has.
func TestPaddleReleaseDecidesWhetherAContainerStarts(t *testing.T) {
	rts := testRuntimes()
	for v, rt := range rts.Releases {
		rt.HostPaths = nil // the runs bind what exists only
		rts.Releases[v] = rt
	}
	table, err := newImageTableWithPaddle("", map[string]ImageEntry{"paddlepaddle/paddle": {PaddleRelease: paddleReleaseByTag}}, rts)
	if err != nil {
		t.Fatal(err)
	}
	ps := []corev1.EnvVar{{Name: "TRAINING_ROLE", Value: "PSERVER"}, {Name: "PADDLE_PSERVERS_IP_PORT_LIST", Value: "10.0.0.1:2000"}}

	t.Run("a pserver on 3.3.1 is refused", func(t *testing.T) {
		procs := &fakeStarter{}
		f := runPodWithImages(t, paddlePod("paddlepaddle/paddle:3.3.1", corev1.RestartPolicyNever, ps...), procs, table)
		f.waitDone()
		s, _ := f.status("paddle")
		term := s.State.Terminated
		if term == nil || term.ExitCode != 128 || term.Reason != "ParameterServerUnsupported" ||
			term.Message != "Paddle 3.3.1 has no parameter-server runtime (PyPI's CPU wheels from 3.1 on are built without it), so this parameter server cannot run; parameter-server and heter jobs need an image of Paddle 2.6.2 or 3.0.0" {
			t.Fatalf("state %+v; want terminated with code 128, reason ParameterServerUnsupported and the message", s.State)
		}
		if len(term.Message) > 256 {
			t.Errorf("the message is %d characters: the operator's condition keeps 256", len(term.Message))
		}
		if procs.count() != 0 || f.phase() != corev1.PodFailed || s.ContainerID == "" {
			t.Errorf("%d processes started, phase %s, container ID %q; want none, Failed, an ID", procs.count(), f.phase(), s.ContainerID)
		}
		if ev := events(f); !strings.Contains(ev, "Warning Failed Error: Paddle 3.3.1 has no parameter-server runtime") {
			t.Errorf("events:\n%s", ev)
		}
	})
	t.Run("an init container of a pserver pod on 3.3.1 runs", func(t *testing.T) {
		procs := &fakeStarter{}
		pod := paddlePod("paddlepaddle/paddle:3.3.1", corev1.RestartPolicyNever, ps...)
		pod.Spec.InitContainers = []corev1.Container{{Name: "prepare", Image: "paddlepaddle/paddle:3.3.1", Command: []string{"python3", "prepare.py"}, Env: ps}}
		f := runPodWithImages(t, pod, procs, table)
		f.waitStarted(1).exit(0)
		f.waitDone()
		if s, _ := f.status("paddle"); s.State.Terminated == nil || s.State.Terminated.Reason != "ParameterServerUnsupported" || procs.count() != 1 {
			t.Errorf("%d processes, the pserver container %+v; want the init container's only, the pserver refused", procs.count(), s.State)
		}
	})
	t.Run("a pserver on 2.0.0 runs on 2.6.2, said in an event", func(t *testing.T) {
		procs := &fakeStarter{}
		f := runPodWithImages(t, paddlePod("paddlepaddle/paddle:2.0.0", corev1.RestartPolicyNever, ps...), procs, table)
		f.waitStarted(1).exit(0)
		f.waitDone()
		if path := envOf(procs.specs[0].Env, "PATH"); path != "/cache/paddle-2.6.2/bin:/usr/bin" {
			t.Errorf("PATH %q; want 2.6.2's", path)
		}
		if ev := events(f); !strings.Contains(ev, "Warning PaddleRelease container paddle: the image asks for Paddle 2.0.0, which this node does not pin; it runs on 2.6.2") {
			t.Errorf("events:\n%s", ev)
		}
	})
	t.Run("a collective worker on 3.3.1 runs", func(t *testing.T) {
		procs := &fakeStarter{}
		f := runPodWithImages(t, paddlePod("paddlepaddle/paddle:3.3.1", corev1.RestartPolicyNever,
			corev1.EnvVar{Name: "PADDLE_TRAINING_ROLE", Value: "TRAINER"}, corev1.EnvVar{Name: "PADDLE_TRAINER_ENDPOINTS", Value: "10.0.0.1:2000"}), procs, table)
		f.waitStarted(1).exit(0)
		f.waitDone()
		if ev := events(f); strings.Contains(ev, "PaddleRelease") {
			t.Errorf("an event for the release asked for:\n%s", ev)
		}
	})
	t.Run("a release of another major waits, naming those there are", func(t *testing.T) {
		procs := &fakeStarter{}
		f := runPodWithImages(t, paddlePod("paddlepaddle/paddle:1.8.5", corev1.RestartPolicyNever), procs, table)
		eventually(t, "the container waits with ErrImagePull", func() bool {
			s, ok := f.status("paddle")
			return ok && s.State.Waiting != nil && s.State.Waiting.Reason == reasonErrImagePull &&
				strings.Contains(s.State.Waiting.Message, "the image asks for Paddle 1.8.5 and this node has no Paddle 1.x runtime, only 2.6.2, 3.0.0, 3.3.1")
		})
		if procs.count() != 0 {
			t.Errorf("%d processes started", procs.count())
		}
	})
}

// events are the events the pod's runtime recorded so far, one a line.
func events(f *podFixture) string {
	rec := f.r.deps.recorder.(*record.FakeRecorder)
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

// envOf is a variable of a NAME=VALUE list.
func envOf(env []string, name string) string {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == name {
			return v
		}
	}
	return ""
}
