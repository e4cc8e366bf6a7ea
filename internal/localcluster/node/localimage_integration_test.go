//go:build integration

package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// writeLocalImages makes, in dir, a runtime (a host directory with a
// program, standing in for a Python venv) and a build context whose image
// runs a script beside its data; it returns the image table entries for them.
func writeLocalImages(t testing.TB, dir string) string {
	t.Helper()
	runtime := filepath.Join(dir, "runtime")
	context := filepath.Join(dir, "contexts", "trainer")
	files := map[string]string{
		filepath.Join(runtime, "bin", "rt-tool"): "#!/bin/sh\necho \"runtime tool ran\"\n",
		filepath.Join(context, "Dockerfile"): `# A trainer image, as a tutorial builds it.
FROM example.com/runtime:v1
COPY app/ /wide_and_deep/
COPY bin/train.sh \
     /opt/trainer/bin/
WORKDIR /wide_and_deep
ENV PATH=/opt/trainer/bin:$PATH \
    TRAINER=local
RUN pip install -r requirements.txt
CMD ["train.sh"]
`,
		filepath.Join(context, "app", "data.txt"): "the data\n",
		// .dockerignore leaves out the secret and the logs but keep.txt.
		filepath.Join(context, ".dockerignore"):           "app/secret.txt\napp/logs\n!app/logs/keep.txt\n",
		filepath.Join(context, "app", "secret.txt"):       "secret\n",
		filepath.Join(context, "app", "logs", "old.log"):  "old\n",
		filepath.Join(context, "app", "logs", "keep.txt"): "kept\n",
		filepath.Join(context, "bin", "train.sh"): `#!/bin/sh
echo "pwd=$(pwd) trainer=$TRAINER"
cat data.txt
echo "files=$(find . -type f | sort | tr '\n' ' ')"
rt-tool
touch ` + runtime + `/written 2>/dev/null || echo "runtime read-only"
mkdir -p log && echo "$NAME" > "log/$NAME.log"
sleep 1
echo "log=$(ls log | tr '\n' ' ')"
echo "gpus=$NVIDIA_VISIBLE_DEVICES/${CUDA_VISIBLE_DEVICES-unset}"
`,
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeLinksContext(t, dir)
	return "  example.com/runtime:\n" +
		"    hostPaths: [" + runtime + "]\n" +
		"    env: {PATH: \"" + runtime + "/bin:/usr/bin:/bin\"}\n" +
		"  example.com/trainer:v1:\n" +
		"    context: " + context + "\n" +
		"  example.com/links:v1:\n" +
		"    context: " + filepath.Join(dir, "contexts", "links") + "\n"
}

// writeLinksContext makes a build context in dir whose links lead to the
// node's state directory (dir/state, see newTestNode): absolute, relative,
// and inside a directory of the image; COPY . /usr/local/ takes them.
func writeLinksContext(t testing.TB, dir string) {
	t.Helper()
	context := filepath.Join(dir, "contexts", "links")
	pki := filepath.Join(dir, "state", "pki")
	if err := os.MkdirAll(filepath.Join(context, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	relPKI, err := filepath.Rel(context, pki)
	if err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"pki": pki, "rel-pki": relPKI, "conf/keys": pki} {
		if err := os.Symlink(target, filepath.Join(context, link)); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		"Dockerfile": "FROM example.com/runtime:v1\nCOPY . /usr/local/\n",
		"data.txt":   "image data\n",
	} {
		if err := os.WriteFile(filepath.Join(context, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLocalImageFromBuildContext(t *testing.T) {
	t.Parallel()
	n := sharedNode(t)
	ns := n.namespace(t)
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "example.com/trainer:v1",
			Env:       []corev1.EnvVar{{Name: "NAME", Value: name}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}},
		}
	}
	a, b := container("a"), container("b")
	b.Env = append(b.Env, corev1.EnvVar{Name: "NVIDIA_VISIBLE_DEVICES", Value: "7"})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:                      n.name,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			NodeSelector:                  map[string]string{"accelerator": "nvidia-tesla-p100"},
			Containers:                    []corev1.Container{a, b},
		},
	}
	n.create(t, pod)
	n.waitPhase(t, ns, "trainer", corev1.PodSucceeded)
	for _, tc := range []struct{ name, gpus string }{{"a", "0,1/unset"}, {"b", "7/unset"}} {
		want := "pwd=/wide_and_deep trainer=local\nthe data\nfiles=./data.txt ./logs/keep.txt \nruntime tool ran\nruntime read-only\n" +
			"log=" + tc.name + ".log \ngpus=" + tc.gpus + "\n"
		if got := n.logs(t, ns, "trainer", tc.name, ""); got != want {
			t.Errorf("container %s logged %q, want %q", tc.name, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(n.stateDir, "contexts", "trainer", "app", "log")); err == nil {
		t.Error("a container's write reached the build context")
	}

	node, err := n.client.CoreV1().Nodes().Get(context.Background(), n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels["accelerator"] != "nvidia-tesla-p100" {
		t.Errorf("node labels %v, want accelerator=nvidia-tesla-p100", node.Labels)
	}
	if q := node.Status.Allocatable["nvidia.com/gpu"]; q.Value() != 4 {
		t.Errorf("allocatable nvidia.com/gpu = %s, want 4", q.String())
	}
}
