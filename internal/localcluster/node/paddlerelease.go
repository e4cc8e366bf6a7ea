package node

// Paddle releases: the node runs each PaddlePaddle image on the Paddle
// release it asks for, one runtime per release the node pins (the image
// table's paddle section). An image asks for a release
//
//   - by its tag, for the entries whose paddleRelease is "tag"
//     (paddlepaddle/paddle:2.6.2, paddle-ubuntu:2.0.0-18.04; a tag naming
//     no release, such as latest, gets the default release);
//   - by its Dockerfile: FROM such an image, or a pinned
//     `pip install paddlepaddle==X` in a RUN, which the node cannot run but
//     reads as "this image holds Paddle X".
//
// A release the node does not pin runs on the pinned one of the same
// major.minor, else on the nearest pinned one of the same major (the oldest
// newer minor, else the newest older one), and the pod gets an event naming
// both. With no pinned release of its major the container waits, its
// message naming the releases there are: nothing runs on a release it was
// not written for without saying so.
//
// A (non-init) container of a parameter-server job (TRAINING_ROLE or
// PADDLE_TRAINING_ROLE PSERVER or HETER_TRAINER, or TRAINER with
// PADDLE_PSERVERS_IP_PORT_LIST) on a release whose wheel lacks the
// parameter-server runtime does not start: it ends at once, terminated with
// reason ParameterServerUnsupported and a message naming the releases that
// have it, instead of failing deep inside fleet.

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/paddlejob/paddlejob/internal/imageref"
)

// PaddleRuntimes are the node's Paddle runtimes: the image table's paddle
// section.
type PaddleRuntimes struct {
	// Default is the release of images naming none.
	Default string `json:"default"`
	// Releases are the runtimes by version.
	Releases map[string]PaddleRuntime `json:"releases"`
	// CacheDir is where the node installs a pending runtime
	// (paddleruntime's cache); "" for its default.
	CacheDir string `json:"cacheDir,omitempty"`
}

// PaddleRuntime is one release's runtime: what an image running on it gets.
type PaddleRuntime struct {
	// ParameterServer: its wheel carries the parameter-server runtime.
	ParameterServer bool `json:"parameterServer,omitempty"`
	// HostPaths are bound read-only, as an entry's (the venv and the base
	// interpreter's prefix).
	HostPaths []string `json:"hostPaths,omitempty"`
	// Env is set under the image's own (PATH with the runtime's bin first).
	Env map[string]string `json:"env,omitempty"`
	// Pending: the runtime is not installed yet. The node installs it when
	// a container first needs it, as a kubelet pulls an image
	// (paddlepull.go); until then HostPaths are unknown and Env's values
	// are placeholders (PendingPaddleRuntime), which the install replaces
	// wherever an entry holds them.
	Pending bool `json:"pending,omitempty"`
}

// PendingPaddleRuntime is the table's entry of a release not installed
// yet: its PATH names a placeholder bin directory before path (the PATH of
// an image naming none), unique to the release.
func PendingPaddleRuntime(version string, parameterServer bool, path string) PaddleRuntime {
	return PaddleRuntime{
		ParameterServer: parameterServer,
		Env:             map[string]string{"PATH": "/paddle-runtime-" + version + "-not-installed/bin:" + path},
		Pending:         true,
	}
}

// InstalledPaddleRuntime is the table's entry of an installed release: its
// bin directory first on PATH, before path.
func InstalledPaddleRuntime(binDir string, parameterServer bool, hostPaths []string, path string) PaddleRuntime {
	return PaddleRuntime{
		ParameterServer: parameterServer,
		HostPaths:       hostPaths,
		Env:             map[string]string{"PATH": binDir + ":" + path},
	}
}

// paddleReleaseByTag is the paddleRelease of entries whose tag names it.
const paddleReleaseByTag = "tag"

// PaddleSelection is the release an image runs on, as the node chose it.
type PaddleSelection struct {
	// Asked is the release the image names ("" when none).
	Asked string
	// Version is the pinned release it runs on; empty when none fits.
	Version string
	// ParameterServer: that release carries the parameter-server runtime.
	ParameterServer bool
	// ParameterServerReleases are the node's releases that do.
	ParameterServerReleases []string
	// Note says why Version is not Asked, for an event on the pod;
	// NoteIsWarning when the minor release differs.
	Note          string
	NoteIsWarning bool
	// Problem says why no release fits.
	Problem string
}

// releaseInTag finds the release a tag names: "2.0.0-18.04" → 2.0.0,
// "3.0.0-gpu-cuda11.8-cudnn8.9-trt8.6" → 3.0.0, "2.6" → 2.6; "" for
// latest, a digest or a tag naming none.
var releaseInTag = regexp.MustCompile(`^v?(\d+\.\d+(?:\.\d+)?)(?:$|[^.\d])`)

// pipPaddlePin finds the Paddle release a RUN pins with pip: paddlepaddle
// (or paddlepaddle-gpu) ==X, with X's .postNNN (CUDA builds) dropped.
var pipPaddlePin = regexp.MustCompile(`\bpaddlepaddle(?:-gpu)?==(\d+\.\d+(?:\.\d+)?)`)

// paddleReleaseOfTag is the release an image reference's tag names.
func paddleReleaseOfTag(image string) string {
	_, tag := imageref.NameAndTag(image)
	if m := releaseInTag.FindStringSubmatch(tag); m != nil {
		return m[1]
	}
	return ""
}

// paddleReleasePinnedBy is the release a RUN instruction installs with pip,
// "" when it installs none.
func paddleReleasePinnedBy(run string) string {
	if !strings.Contains(run, "pip") || !strings.Contains(run, "install") {
		return ""
	}
	ms := pipPaddlePin.FindAllStringSubmatch(run, -1)
	if ms == nil {
		return ""
	}
	return ms[len(ms)-1][1]
}

// selectPaddleRelease chooses the pinned release an image asking for asked
// runs on (see the comment at the top of this file).
func selectPaddleRelease(rts *PaddleRuntimes, asked string) PaddleSelection {
	sel := PaddleSelection{Asked: asked}
	if rts == nil || len(rts.Releases) == 0 {
		sel.Problem = "the image needs a Paddle runtime and this node has none (its image table has no paddle section)"
		return sel
	}
	pinned := slices.SortedFunc(maps.Keys(rts.Releases), compareReleases)
	for _, v := range pinned {
		if rts.Releases[v].ParameterServer {
			sel.ParameterServerReleases = append(sel.ParameterServerReleases, v)
		}
	}
	list := strings.Join(pinned, ", ")
	choose := func(v string) PaddleSelection {
		sel.Version, sel.ParameterServer = v, rts.Releases[v].ParameterServer
		return sel
	}
	if asked == "" {
		return choose(rts.Default)
	}
	if _, ok := rts.Releases[asked]; ok {
		return choose(asked)
	}
	major, minor := releaseParts(asked)
	var sameMinor, newer, older string
	for _, v := range pinned {
		vMajor, vMinor := releaseParts(v)
		switch {
		case vMajor != major:
		case vMinor == minor:
			sameMinor = v // the newest of that minor: pinned is sorted
		case vMinor > minor && newer == "":
			newer = v
		case vMinor < minor:
			older = v
		}
	}
	switch {
	case sameMinor != "":
		sel = choose(sameMinor)
		sel.Note = fmt.Sprintf("the image asks for Paddle %s; it runs on %s, this node's %d.%d release (pinned: %s)", asked, sameMinor, major, minor, list)
	case newer != "" || older != "":
		v := cmp(newer, older)
		sel = choose(v)
		sel.Note = fmt.Sprintf("the image asks for Paddle %s, which this node does not pin; it runs on %s, the nearest pinned %d.x release (pinned: %s)", asked, v, major, list)
		sel.NoteIsWarning = true
	default:
		sel.Problem = fmt.Sprintf("the image asks for Paddle %s and this node has no Paddle %d.x runtime, only %s: use an image of one of those (such as paddlepaddle/paddle:%s)", asked, major, list, rts.Default)
	}
	return sel
}

// cmp is the first non-empty string.
func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// releaseParts are a release's major and minor numbers (0 and 0 for a
// string that is no release).
func releaseParts(v string) (major, minor int) {
	parsed, err := version.ParseGeneric(v)
	if err != nil {
		return 0, 0
	}
	return int(parsed.Major()), int(parsed.Minor())
}

// compareReleases orders pinned releases (each one the pins checked) as
// apimachinery's generic versions do.
func compareReleases(a, b string) int {
	c, _ := version.MustParseGeneric(a).Compare(b)
	return c
}

// withPaddle is an entry running on the release asked selects: the
// runtime's host paths added and its env under the entry's own.
func (t *ImageTable) withPaddle(e ImageEntry, asked string) ImageEntry {
	sel := selectPaddleRelease(t.paddle, asked)
	e.PaddleRelease, e.Paddle = "", &sel
	if sel.Version == "" {
		return e
	}
	rt := t.paddle.Releases[sel.Version]
	e.HostPaths = slices.Clone(e.HostPaths)
	for _, p := range rt.HostPaths {
		if !slices.Contains(e.HostPaths, p) {
			e.HostPaths = append(e.HostPaths, p)
		}
	}
	env := maps.Clone(rt.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, e.Env)
	if len(env) > 0 {
		e.Env = env
	}
	return e
}

// pendingPaddle is the release an entry runs on when its runtime is not
// installed yet, "" otherwise.
func (t *ImageTable) pendingPaddle(e ImageEntry) string {
	if e.Paddle == nil || e.Paddle.Version == "" || t.paddle == nil || !t.paddle.Releases[e.Paddle.Version].Pending {
		return ""
	}
	return e.Paddle.Version
}

// withInstalledPaddle is the table built again with release version's
// runtime installed as rt: every entry's env value holding the pending
// runtime's placeholder (an image's PATH naming the default release's bin
// directory) names rt's instead.
func (t *ImageTable) withInstalledPaddle(version string, rt PaddleRuntime) (*ImageTable, error) {
	if t.paddle == nil {
		return nil, fmt.Errorf("the image table has no Paddle runtime %s", version)
	}
	old := t.paddle.Releases[version]
	paddle := &PaddleRuntimes{Default: t.paddle.Default, CacheDir: t.paddle.CacheDir, Releases: maps.Clone(t.paddle.Releases)}
	paddle.Releases[version] = rt
	entries := make(map[string]ImageEntry, len(t.raw))
	for key, e := range t.raw {
		for k, v := range old.Env {
			cur, ok := e.Env[k]
			if !ok || v == "" || !strings.Contains(cur, v) {
				continue
			}
			e.Env = maps.Clone(e.Env)
			e.Env[k] = strings.ReplaceAll(cur, v, rt.Env[k])
		}
		entries[key] = e
	}
	nt, err := newImageTableWithPaddle(t.file, entries, paddle)
	if err != nil {
		return nil, err
	}
	nt.outputs, nt.contexts = t.outputs, t.contexts
	return nt, nil
}

// repinPaddle moves an entry built from a Dockerfile onto the release its
// `pip install paddlepaddle==X` pins: the runtime its FROM image gave it
// (if any) is replaced, its host paths and its env values (PATH naming its
// bin directory) swapped for the new one's.
func (t *ImageTable) repinPaddle(e ImageEntry, pinned string) ImageEntry {
	sel := selectPaddleRelease(t.paddle, pinned)
	var old PaddleRuntime
	if e.Paddle != nil && e.Paddle.Version != "" && t.paddle != nil {
		old = t.paddle.Releases[e.Paddle.Version]
	}
	e.PaddleRelease, e.Paddle = "", &sel
	e.HostPaths = slices.DeleteFunc(slices.Clone(e.HostPaths), func(p string) bool { return slices.Contains(old.HostPaths, p) })
	e.Env = maps.Clone(e.Env)
	if e.Env == nil {
		e.Env = map[string]string{}
	}
	var rt PaddleRuntime
	if sel.Version != "" {
		rt = t.paddle.Releases[sel.Version]
	}
	for k, v := range old.Env {
		if cur, ok := e.Env[k]; ok && v != "" && strings.Contains(cur, v) {
			e.Env[k] = strings.ReplaceAll(cur, v, rt.Env[k])
		}
	}
	for _, p := range rt.HostPaths {
		if !slices.Contains(e.HostPaths, p) {
			e.HostPaths = append(e.HostPaths, p)
		}
	}
	for k, v := range rt.Env {
		if _, ok := e.Env[k]; !ok {
			e.Env[k] = v
		}
	}
	if len(e.Env) == 0 {
		e.Env = nil
	}
	return e
}

// refusal ends a container's run before it starts: it is reported
// terminated with the reason and message, as a run that failed.
type refusal struct {
	reason, message string
}

func (e *refusal) Error() string { return e.message }

// reasonParameterServerUnsupported terminates a parameter-server job's
// container whose Paddle lacks the parameter-server runtime.
const reasonParameterServerUnsupported = "ParameterServerUnsupported"

// refusedExitCode is a refused container's exit code: 128, as the kubelet
// reports a container it could not start; restart policies that retry
// signals (129-255) do not retry it.
const refusedExitCode = 128

// checkPaddle says whether a container can run on the Paddle release its
// image selected: a *waitError while no release fits, a *refusal for a
// parameter-server role on a release without the parameter-server runtime.
// A substituted release is reported as an event.
func (r *podRuntime) checkPaddle(c *containerRun, entry ImageEntry, env *envList) error {
	sel := entry.Paddle
	if sel == nil {
		return nil
	}
	if sel.Problem != "" {
		return &waitError{reason: reasonErrImagePull, err: fmt.Errorf("image %q: %s", c.spec.Image, sel.Problem)}
	}
	// Init containers prepare; the operator gives them the role's env too.
	if role := parameterServerRole(env.lookup); role != "" && !sel.ParameterServer && c.kind == kindContainer {
		return &refusal{reason: reasonParameterServerUnsupported, message: fmt.Sprintf(
			"Paddle %s has no parameter-server runtime (PyPI's CPU wheels from 3.1 on are built without it), so this %s cannot run; parameter-server and heter jobs need an image of Paddle %s",
			sel.Version, role, strings.Join(sel.ParameterServerReleases, " or "))}
	}
	if sel.Note != "" {
		kind := corev1.EventTypeNormal
		if sel.NoteIsWarning {
			kind = corev1.EventTypeWarning
		}
		r.event(kind, "PaddleRelease", "container "+c.spec.Name+": "+sel.Note)
	}
	return nil
}

// parameterServerRole names the parameter-server role a container's
// environment gives it, as Paddle's role maker reads it; "" for none.
func parameterServerRole(lookup func(string) (string, bool)) string {
	role, _ := lookup("TRAINING_ROLE")
	if role == "" {
		role, _ = lookup("PADDLE_TRAINING_ROLE")
	}
	servers, _ := lookup("PADDLE_PSERVERS_IP_PORT_LIST")
	switch {
	case role == "PSERVER":
		return "parameter server"
	case role == "HETER_TRAINER":
		return "heter trainer"
	case role == "TRAINER" && servers != "":
		return "trainer of a parameter-server job"
	}
	return ""
}

// refuse reports a run of the container that the node refused to start:
// terminated at once with the refusal's reason and message.
func (r *podRuntime) refuse(c *containerRun, rf *refusal) corev1.ContainerStateTerminated {
	now := r.deps.clock.Now()
	r.mu.Lock()
	c.runs++
	run := c.runs - 1
	r.mu.Unlock()
	term := corev1.ContainerStateTerminated{
		ExitCode:    refusedExitCode,
		Reason:      rf.reason,
		Message:     rf.message,
		ContainerID: containerID(r.uid, c.spec.Name, run),
	}
	term.StartedAt.Time, term.FinishedAt.Time = now, now
	r.setState(c, corev1.ContainerState{Terminated: &term})
	r.event(corev1.EventTypeWarning, "Failed", "Error: "+rf.message)
	return term
}
