package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/localcluster"
	"github.com/paddlejob/paddlejob/pkg/client"
)

// runCLI runs the paddlejob command line with args, as main does.
func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// TestBadInputsFailBeforeAnything: each bad flag is an error naming the
// flag and what it takes, before a process starts or a cluster is asked.
func TestBadInputsFailBeforeAnything(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	// No cluster: a check that reached for one would fail differently.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	submit := []string{"submit", "--name", "j", "--image", "busybox", "--entry-point", "python train.py", "--cpu", "1", "--dry-run"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no parameter servers", append(submit, "--pservers", "0"), []string{"--pservers 0: must be between 1 and 10000"}},
		{"no trainers", append(submit, "--trainers", "0"), []string{"--trainers 0: must be between 1 and 10000"}},
		{"too many trainers", append(submit, "--trainers", "10001"), []string{"--trainers 10001: must be between 1 and 10000"}},
		{"a lowercase suffix", append(submit, "--memory", "8g"), []string{`--memory "8g": must be a plain integer with one of the suffixes`, "8Gi"}},
		{"an image with a space", append(submit, "--image", "Bad Image"), []string{`--image "Bad Image": an image reference has no spaces`}},
		{"an uppercase image", append(submit, "--image", "Team/Trainer:v1"), []string{`--image "Team/Trainer:v1": "Team": repository names are lowercase`}},
		{"a bad intranet", append(submit, "--intranet", "Pod"), []string{`--intranet "Pod": want PodIP, Service or Host`}},
		{"a capacity that is no quantity", []string{"up", "--home", home, "--capacity", "cpu=abc"}, []string{`--capacity "cpu=abc": cpu: quantities must match`, "cpu=8,memory=32Gi"}},
		{"a capacity without =", []string{"up", "--home", home, "--capacity", "cpu"}, []string{`--capacity "cpu": "cpu": want NAME=QUANTITY`}},
		{"GPUs in the capacity", []string{"up", "--home", home, "--capacity", "nvidia.com/gpu=2"}, []string{"give the GPUs with --gpus"}},
		{"negative GPUs", []string{"up", "--home", home, "--gpus", "-1"}, []string{"--gpus -1: must be 0 or more"}},
		{"no nodes", []string{"up", "--home", home, "--nodes", "0"}, []string{"--nodes 0: a local cluster has 1 to 16 nodes"}},
		{"too many nodes", []string{"up", "--home", home, "--nodes", "17"}, []string{"--nodes 17: a local cluster has 1 to 16 nodes"}},
		{"an unknown PodSecurity level", []string{"up", "--home", home, "--pod-security", "strict"}, []string{`--pod-security "strict": want one of privileged, baseline, restricted`}},
		{"an unknown add-on", []string{"up", "--home", home, "--with", "yunikorn"}, []string{`--with: unknown add-on "yunikorn": known are volcano, coscheduling, kueue`}},
		{"a missing image table", []string{"up", "--home", home, "--image-table", filepath.Join(home, "none.yaml")}, []string{"--image-table: reading image table"}},
		{"several at once", []string{"up", "--home", home, "--gpus", "-2", "--capacity", "memory=lots"}, []string{"--gpus -2", `--capacity "memory=lots"`}},
		{"logs since and since-time", []string{"logs", "j", "--since", "1m", "--since-time", "2026-11-25T10:00:00Z"}, []string{"--since or --since-time, not both"}},
		{"logs since-time", []string{"logs", "j", "--since-time", "yesterday"}, []string{`--since-time "yesterday": want an RFC 3339 time`}},
		{"get names and a selector", []string{"get", "a", "-l", "x=y"}, []string{"not both"}},
		{"get with a bad output", []string{"get", "-o", "csv"}, []string{`--output "csv": want table, wide, yaml, json, name or jsonpath=TEMPLATE`}},
		{"get with a bad template", []string{"get", "-o", "jsonpath={.items[}"}, []string{`--output "jsonpath={.items[}"`}},
		{"delete nothing named", []string{"delete"}, []string{"name the jobs to delete, or give --all or -l SELECTOR"}},
		{"delete all and names", []string{"delete", "a", "--all"}, []string{"one of them"}},
		{"run a missing file", []string{"run", "-f", filepath.Join(home, "job.yaml")}, []string{"no such file"}},
		{"a build context that is no directory", []string{"run", "-f", "../../examples/jobs/resnet.yaml", "--build-context", filepath.Join(home, "none")}, []string{"--build-context", "no such file or directory", "a directory holding a Dockerfile"}},
		{"a build context without a Dockerfile", []string{"run", "-f", "../../examples/jobs/resnet.yaml", "--build-context", "."}, []string{"--build-context .", "Dockerfile: no such file"}},
		{"a build context of an image the job lacks", []string{"run", "-f", "../../examples/jobs/resnet.yaml", "--build-context", "my/trainer:v1=../../examples/images/demo-resnet"},
			[]string{"the job runs no image my/trainer:v1 (it runs registry.baidubce.com/paddle-operator/demo-resnet:v1)"}},
		{"a build context for the local cluster, none running", []string{"run", "-f", "../../examples/jobs/resnet.yaml", "--home", home, "--kubeconfig", "testdata/kubeconfig-unreachable", "--build-context", "../../examples/images/demo-resnet"},
			[]string{"--build-context runs images on the local cluster, and none runs in " + home, "docker build -t registry.baidubce.com/paddle-operator/demo-resnet:v1 ../../examples/images/demo-resnet && docker push"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCLI(t, "", tc.args...)
			if err == nil {
				t.Fatalf("paddlejob %s succeeded", strings.Join(tc.args, " "))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("paddlejob %s:\n%v\nwant it to say %q", strings.Join(tc.args, " "), err, w)
				}
			}
		})
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Errorf("a refused up left %s behind (%v)", home, err)
	}
}

// run refuses a bad image before it asks any cluster (there is none here).
func TestRunRefusesABadImage(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	job := "apiVersion: batch.paddlepaddle.org/v1\nkind: PaddleJob\nmetadata: {name: j}\nspec:\n  worker:\n    template:\n      spec:\n        containers: [{name: paddle, image: Bad Image}]\n"
	_, _, err := runCLI(t, job, "run", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `-: PaddleJob j: image "Bad Image": an image reference has no spaces`) {
		t.Errorf("run: %v", err)
	}
}

func TestSubmitTakesBinarySuffixes(t *testing.T) {
	out, _, err := runCLI(t, "", "submit", "--name", "j", "--image", "busybox", "--entry-point", "sh", "--cpu", "1", "--memory", "8Gi", "--dry-run", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, `"memory": "8Gi"`) != 4 {
		t.Errorf("the pods' requests and limits are not 8Gi:\n%s", out)
	}
}

// The SDK tells the local cluster's node by its name.
func TestLocalNodeName(t *testing.T) {
	if client.LocalNodeName != localcluster.NodeName {
		t.Errorf("client.LocalNodeName %q, the local cluster's node is %q", client.LocalNodeName, localcluster.NodeName)
	}
}

func TestPodSelectors(t *testing.T) {
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "wd-ps-0", Labels: map[string]string{paddlev1.LabelReplicaType: "ps"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "wd-worker-0", Labels: map[string]string{paddlev1.LabelReplicaType: "worker"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "wd-worker-1", Labels: map[string]string{paddlev1.LabelReplicaType: "worker"}}},
	}
	if got := strings.Join(podSelectors("wd", pods), " "); got != "all ps worker ps-0 worker-0 worker-1" {
		t.Errorf("logs completes %q", got)
	}
}
