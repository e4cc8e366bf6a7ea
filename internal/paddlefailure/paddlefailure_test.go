package paddlefailure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
)

// pod is a pod of a PaddleJob as the operator makes it, as far as Explain
// reads it: the job's mode (the servers' list in a parameter-server job),
// the container "paddle", its volumes, the node.
type pod struct{ corev1.Pod }

func psPod() *pod         { return newPod(true) }
func collectivePod() *pod { return newPod(false) }

func newPod(ps bool) *pod {
	env := []corev1.EnvVar{{Name: "PADDLE_TRAINER_ID", Value: "0"}}
	if ps {
		env = append(env, corev1.EnvVar{Name: "PADDLE_PSERVERS_IP_PORT_LIST", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "j-endpoints"}, Key: "PADDLE_PSERVERS_IP_PORT_LIST"},
		}})
	}
	p := &pod{}
	p.Name = "j-worker-0"
	p.Labels = map[string]string{paddlev1.LabelJobName: "j"}
	p.Spec.NodeName = "worker-pool-3"
	p.Spec.Containers = []corev1.Container{{Name: "paddle", Env: env}}
	return p
}

// local puts the pod on the local cluster's node.
func (p *pod) local() *pod { p.Spec.NodeName = "paddlejob-node"; return p }

// volume adds a volume mounted at path.
func (p *pod) volume(v corev1.Volume, path string, readOnly bool) *pod {
	p.Spec.Volumes = append(p.Spec.Volumes, v)
	c := &p.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: path, ReadOnly: readOnly})
	return p
}

func (p *pod) memoryLimit(q string) *pod {
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
	return p
}

func (p *pod) readOnlyRoot() *pod {
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
	return p
}

func (p *pod) reason(r string) *pod { p.Status.Reason = r; return p }

func hostPath(name, path string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
}

func claim(name, claim string, readOnly bool) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}}}
}

func configMap(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}
}

// logOf is a captured log (testdata/README.md says how each was made).
func logOf(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "logs", name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// failed is the terminated state the kubelet reports for a container that
// exited with code, its message the log's end.
func failed(code int32, reason, log string) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: log}
}

// explainCase is a failure: a captured log, the state and pod it ends in,
// and what its explanation must be (no explanation when wantID is "").
type explainCase struct {
	name   string
	log    string
	code   int32
	reason string
	pod    *pod
	wantID string
	// want are words the cause or fix must hold.
	want []string
}

func explainCases() []explainCase {
	return append(programCases(), storageAndMemoryCases()...)
}

// programCases are the failures of programs that do not fit their job or
// image, and Paddle's own.
func programCases() []explainCase {
	const e = "Error"
	return []explainCase{
		{name: "collective program on a pserver, 2.6.2", log: "collective-program-in-ps-job-2.6.2", code: 1, reason: e, pod: psPod(),
			wantID: "collective-program-in-ps-job", want: []string{"is_collective=True", "Remove spec.ps"}},
		{name: "collective program on a pserver, 3.0.0", log: "collective-program-in-ps-job-3.0.0", code: 1, reason: e, pod: psPod(),
			wantID: "collective-program-in-ps-job"},
		{name: "the role assertion outside a parameter-server job", log: "collective-program-in-ps-job-3.0.0", code: 1, reason: e, pod: collectivePod()},
		{name: "parameter-server program in a collective job, 2.6.2", log: "ps-program-in-collective-job-2.6.2", code: 1, reason: e, pod: collectivePod(),
			wantID: "ps-program-in-collective-job", want: []string{"no spec.ps", "Add spec.ps"}},
		{name: "parameter-server program in a collective job, 3.0.0", log: "ps-program-in-collective-job-3.0.0", code: 1, reason: e, pod: collectivePod(),
			wantID: "ps-program-in-collective-job"},
		{name: "sparse_embedding under PIR in a parameter-server job", log: "pir-static-program-sparse-embedding-3.0.0", code: 1, reason: e, pod: psPod(),
			wantID: "pir-static-program", want: []string{"FLAGS_enable_pir_api=0", "template sets the variable"}},
		{name: "a dense static program under PIR in a parameter-server job", log: "pir-static-program-3.0.0", code: 1, reason: e, pod: psPod(),
			wantID: "pir-static-program", want: []string{"envFrom"}},
		{name: "a dense static parameter-server program in a collective job", log: "pir-static-program-collective-3.0.0", code: 1, reason: e, pod: collectivePod(),
			wantID: "pir-static-program", want: []string{"template's env", "needs spec.ps"}},
		{name: "a static program under PIR outside a PaddleJob", log: "pir-static-program-3.0.0", code: 1, reason: e, pod: nil,
			wantID: "pir-static-program", want: []string{"before paddle is imported"}},
		{name: "paddle.fluid, 2.6.2", log: "paddle-fluid-removed-2.6.2", code: 1, reason: e, pod: collectivePod(), wantID: "paddle-fluid-removed"},
		{name: "paddle.fluid, 3.0.0", log: "paddle-fluid-removed-3.0.0", code: 1, reason: e, pod: collectivePod(), wantID: "paddle-fluid-removed"},
		{name: "a missing module on a cluster", log: "missing-module-3.0.0", code: 1, reason: e, pod: psPod(),
			wantID: "missing-module", want: []string{"module sklearn", "RUN pip install"}},
		{name: "a missing module on the local cluster", log: "missing-module-2.6.2", code: 1, reason: e, pod: psPod().local(),
			wantID: "missing-module", want: []string{"module sklearn", "build context", "pip install --target"}},
		{name: "a name the image's Paddle lacks", log: "import-name-missing-2.6.2", code: 1, reason: e, pod: collectivePod(),
			wantID: "import-name-missing", want: []string{"swiglu from paddle.incubate.nn.functional"}},
		{name: "a name the image's Paddle lacks, on the local cluster", log: "import-name-missing-2.6.2", code: 1, reason: e, pod: collectivePod().local(),
			wantID: "import-name-missing", want: []string{"2.6.2, 3.0.0 and 3.3.1"}},
		{name: "a GPU on a CPU build, on a cluster", log: "gpu-on-cpu-build-3.0.0", code: 1, reason: e, pod: collectivePod(),
			wantID: "gpu-on-cpu-build", want: []string{"nvidia.com/gpu", "is_compiled_with_cuda"}},
		{name: "a GPU on a CPU build, on the local cluster", log: "gpu-on-cpu-build-2.6.2", code: 1, reason: e, pod: collectivePod().local(),
			wantID: "gpu-on-cpu-build", want: []string{"emulates GPUs"}},
		{name: "GEO-SGD with sparse_embedding, 2.6.2", log: "geo-sparse-embedding-2.6.2", code: 1, reason: e, pod: psPod(),
			wantID: "geo-sparse-embedding", want: []string{"is_sparse=True"}},
		{name: "GEO-SGD with sparse_embedding, 3.0.0", log: "geo-sparse-embedding-3.0.0", code: 1, reason: e, pod: psPod(), wantID: "geo-sparse-embedding"},
		{name: "a rendezvous nobody else joined, 2.6.2", log: "rendezvous-timeout-collective-2.6.2", code: 134, reason: e, pod: collectivePod(),
			wantID: "rendezvous-timeout", want: []string{"900 seconds"}},
		{name: "a rendezvous nobody else joined, 3.0.0", log: "rendezvous-timeout-collective-3.0.0", code: 1, reason: e, pod: collectivePod(),
			wantID: "rendezvous-timeout", want: []string{"paddlejob describe"}},
		{name: "Gloo's store in fleet.init, nobody else joined", log: "rendezvous-timeout-gloo-ps-3.0.0", code: 1, reason: e, pod: psPod(),
			wantID: "rendezvous-timeout", want: []string{"Gloo's store"}},
		{name: "Gloo groups created one after another", log: "gloo-groups-race-3.0.0", code: 1, reason: e, pod: collectivePod(),
			wantID: "gloo-groups-race", want: []string{"init_parallel_env()", "paddle.DataParallel"}},
		{name: "a trainer before its server", log: "trainer-before-server-3.0.0", code: 1, reason: e, pod: psPod(),
			wantID: "trainer-before-server", want: []string{"wait_for_servers"}},
		{name: "the all group on a server, 2.6.2", log: "gloo-group-missing-ps-2.6.2", code: 1, reason: e, pod: psPod(), wantID: "gloo-group-missing"},
		{name: "the all group on a server, 3.0.0", log: "gloo-group-missing-ps-3.0.0", code: 1, reason: e, pod: psPod(), wantID: "gloo-group-missing"},
		{name: "the all group on a trainer, 3.0.0", log: "gloo-group-missing-worker-3.0.0", code: 1, reason: e, pod: psPod(),
			wantID: "gloo-group-missing", want: []string{"PADDLE_GLOO_FS_PATH"}},
	}
}

// storageAndMemoryCases are the failures whose explanation reads the pod's
// volumes and limits.
func storageAndMemoryCases() []explainCase {
	const e = "Error"
	rw := func(p *pod, v corev1.Volume) *pod { return p.volume(v, "/output", false) }
	return []explainCase{
		{name: "a read-only host path on the local cluster", log: "read-only-file-system-3.0.0", code: 1, reason: e,
			pod: rw(psPod().local(), hostPath("output", "/data/runs")), wantID: "read-only-file-system",
			want: []string{"/output/run-1", "hostPath volume output (/data/runs) at /output", "paddlejob up --host-path-rw /data/runs"}},
		{name: "a read-only host path on a cluster", log: "read-only-file-system-2.6.2", code: 1, reason: e,
			pod: rw(collectivePod(), hostPath("output", "/data/runs")), wantID: "read-only-file-system",
			want: []string{"volume output (hostPath /data/runs), mounted at /output", "ReadWriteOnce"}},
		{name: "a readOnly volumeMount", log: "read-only-file-system-3.0.0", code: 1, reason: e,
			pod: collectivePod().volume(claim("output", "runs", false), "/output", true), wantID: "read-only-file-system",
			want: []string{"mounts volume output (persistentVolumeClaim runs) at /output with readOnly: true", "readOnly: false"}},
		{name: "a readOnly claim", log: "read-only-file-system-3.0.0", code: 1, reason: e,
			pod: rw(collectivePod(), claim("output", "runs", true)), wantID: "read-only-file-system",
			want: []string{"persistentVolumeClaim runs is mounted with readOnly: true"}},
		{name: "a configMap", log: "read-only-file-system-3.0.0", code: 1, reason: e,
			pod: rw(collectivePod(), configMap("output")), wantID: "read-only-file-system", want: []string{"(configMap output)", "emptyDir"}},
		{name: "the deepest mount holds the path", log: "read-only-file-system-3.0.0", code: 1, reason: e,
			pod:    collectivePod().volume(claim("data", "data", false), "/", false).volume(configMap("cfg"), "/output/run-10", false).volume(hostPath("output", "/data/runs"), "/output", true),
			wantID: "read-only-file-system", want: []string{"volume output (hostPath /data/runs) at /output with readOnly: true"}},
		{name: "no volume, a read-only root", log: "read-only-file-system-3.0.0", code: 1, reason: e,
			pod: collectivePod().readOnlyRoot(), wantID: "read-only-file-system", want: []string{"readOnlyRootFilesystem: true"}},
		{name: "no volume", log: "read-only-file-system-3.0.0", code: 1, reason: e,
			pod: collectivePod().volume(hostPath("out", "/data"), "/out", false), wantID: "read-only-file-system", want: []string{"on no volume of container paddle"}},
		{name: "a read-only file system outside a pod", log: "read-only-file-system-3.0.0", code: 1, reason: e, pod: nil,
			wantID: "read-only-file-system", want: []string{"/output/run-1"}},
		{name: "out of memory under a limit", log: "out-of-memory-3.0.0", code: 137, reason: "OOMKilled", pod: collectivePod().memoryLimit("1Gi"),
			wantID: "out-of-memory", want: []string{"its limit, 1Gi", "above 1Gi"}},
		{name: "out of memory on the local node", log: "out-of-memory-3.0.0", code: 137, reason: "OOMKilled", pod: collectivePod().local(),
			wantID: "out-of-memory", want: []string{"--pod-memory-limit"}},
		{name: "out of memory on a cluster", log: "out-of-memory-3.0.0", code: 137, reason: "OOMKilled", pod: collectivePod(),
			wantID: "out-of-memory", want: []string{"resources.limits.memory"}},
		{name: "killed, as by the node's OOM killer", log: "out-of-memory-3.0.0", code: 137, reason: e, pod: collectivePod(),
			wantID: "killed", want: []string{"SIGKILL"}},
		{name: "killed by the node's restart", log: "out-of-memory-3.0.0", code: 137, reason: e, pod: collectivePod().reason("NodeRestarted")},
		{name: "an unknown failure", log: "out-of-memory-3.0.0", code: 1, reason: e, pod: collectivePod()},
		{name: "a success", log: "missing-module-3.0.0", code: 0, reason: "Completed", pod: psPod()},
	}
}

// Every signature explains the real logs it was made for, with the case
// the pod calls for, and no other failure.
func TestExplain(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range explainCases() {
		t.Run(tc.name, func(t *testing.T) {
			var p *corev1.Pod
			if tc.pod != nil {
				p = &tc.pod.Pod
			}
			got := Explain(p, "paddle", failed(tc.code, tc.reason, logOf(t, tc.log)))
			if tc.wantID == "" {
				if got != nil {
					t.Fatalf("explained as %s, want no explanation", got)
				}
				return
			}
			if got == nil || got.ID != tc.wantID {
				t.Fatalf("explained as %v, want %s", got, tc.wantID)
			}
			covered[got.ID] = true
			text := got.Cause + " " + got.Fix
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("the explanation does not say %q:\n%s", w, got)
				}
			}
			if strings.ContainsAny(text, "{}") {
				t.Errorf("a variable was left unset:\n%s", got)
			}
			if back := Parse("pod j-worker-0 failed. " + got.String() + " (restart 1)"); back == nil || *back != *got {
				t.Errorf("Parse gave %+v back for\n%s", back, got)
			}
		})
	}
	for _, s := range Signatures() {
		if !covered[s.ID] {
			t.Errorf("signature %s explains none of the captured logs", s.ID)
		}
	}
}

// A table that cannot be matched as written is refused when it loads.
func TestLoadRefusesBadTables(t *testing.T) {
	const good = `
- id: x
  title: X
  match: [{log: ['boom']}]
  cause: c.
  fix: f.
  releases: [any]
  doc: x
`
	if _, err := load([]byte("signatures:" + good)); err != nil {
		t.Fatalf("a good table: %v", err)
	}
	for _, tc := range []struct{ name, table, want string }{
		{"an id twice", good + good, "there twice"},
		{"a bad expression", strings.Replace(good, "'boom'", "'(boom'", 1), "missing closing )"},
		{"no match", strings.Replace(good, "match: [{log: ['boom']}]", "match: []", 1), "no match"},
		{"a match of nothing", strings.Replace(good, "{log: ['boom']}", "{mode: ps}", 1), "neither log, exitCode nor reason"},
		{"an unknown mode", strings.Replace(good, "{log: ['boom']}", "{log: ['boom'], mode: heter}", 1), "mode"},
		{"an unknown context", strings.Replace(good, "doc: x", "doc: x\n  context: weather", 1), "unknown context"},
		{"a case its context never picks", strings.Replace(good, "doc: x", "doc: x\n  context: node\n  cases: {moon: {when: never, fix: f.}}", 1), "case \"moon\""},
		{"a fix that would end the cause", strings.Replace(good, "cause: c.", "cause: 'c. Fix: nothing.'", 1), "ends an explanation"},
		{"a doc that is no anchor", strings.Replace(good, "doc: x", "doc: 'Known Issues'", 1), "anchor"},
		{"an unknown field", strings.Replace(good, "doc: x", "doc: x\n  severity: high", 1), "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load([]byte("signatures:" + tc.table))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("load: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
