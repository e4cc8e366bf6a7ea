package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	repoConfig = filepath.Join("..", "..", "config")
	repoChart  = filepath.Join("..", "..", "charts", "paddlejob")
)

// The chart's generated files are what config/ generates now.
func TestChartIsUpToDate(t *testing.T) {
	files, err := Generate(repoConfig)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(repoChart, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("charts/paddlejob/%s is stale: run make manifests (go run ./hack/chartgen)", name)
		}
	}
	crds, _ := filepath.Glob(filepath.Join(repoChart, CRDDir, "*"))
	for _, c := range crds {
		if _, ok := files[CRDDir+"/"+filepath.Base(c)]; !ok {
			t.Errorf("charts/paddlejob/crds/%s is not in config/crd/bases: run make manifests", filepath.Base(c))
		}
	}
}

// copyConfig copies the parts of config/ chartgen reads into a temporary
// directory, to break them there.
func copyConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, rel := range []string{"crd/bases", "rbac", "webhook"} {
		if err := os.CopyFS(filepath.Join(dir, rel), os.DirFS(filepath.Join(repoConfig, rel))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// A role or webhook configuration the chart does not install is an error,
// not silently left out.
func TestRefusesWhatTheChartWouldMiss(t *testing.T) {
	for _, c := range []struct {
		name, file, text, want string
	}{
		{"another generated Role", "rbac/role.yaml",
			"---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: paddlejob-operator\n  namespace: kube-system\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get]\n",
			`Role "paddlejob-operator" twice`},
		{"another ClusterRole", "rbac/leader_election_role.yaml",
			"---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: extra\nrules: []\n",
			`ClusterRole "extra" is not one the chart installs`},
		{"another webhook configuration", "webhook/manifests.yaml",
			"---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: other\nwebhooks: []\n",
			`ValidatingWebhookConfiguration "other" is not one the chart installs`},
		{"a role in the wrong file", "rbac/role.yaml",
			"---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: paddlejob-operator-leader-election\nrules: []\n",
			`Role "paddlejob-operator-leader-election" is not one the chart installs`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyConfig(t)
			appendTo(t, filepath.Join(dir, filepath.FromSlash(c.file)), c.text)
			_, err := Generate(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// A webhook that calls a URL, not a service, cannot be pointed at the
// chart's Service.
func TestRefusesURLWebhooks(t *testing.T) {
	dir := copyConfig(t)
	path := filepath.Join(dir, "webhook", "manifests.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("    service:\n      name: webhook-service\n      namespace: system\n      path: /mutate-batch-paddlepaddle-org-v1-paddlejob\n"),
		[]byte("    url: https://example.com/mutate\n"), 1)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(dir); err == nil || !strings.Contains(err.Error(), "does not call a service") {
		t.Fatalf("got %v, want a refusal of the URL webhook", err)
	}
}

// Data that holds a template delimiter would be executed by Helm: refused.
func TestRefusesTemplateDelimiters(t *testing.T) {
	dir := copyConfig(t)
	path := filepath.Join(dir, "rbac", "role.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("  - configmaps\n"), []byte("  - '{{ .Values.x }}'\n"), 1)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(dir); err == nil || !strings.Contains(err.Error(), "template delimiter") {
		t.Fatalf("got %v, want a refusal of the delimiter", err)
	}
}

// Write replaces the chart's CRDs with config/'s, removing ones config/ no
// longer has, and writes the generated template.
func TestWrite(t *testing.T) {
	files, err := Generate(repoConfig)
	if err != nil {
		t.Fatal(err)
	}
	chart := t.TempDir()
	if err := os.MkdirAll(filepath.Join(chart, CRDDir), 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(chart, CRDDir, "old.example.com_things.yaml")
	if err := os.WriteFile(stale, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(chart, files); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale CRD is still there: %v", err)
	}
	for name, want := range files {
		if got, err := os.ReadFile(filepath.Join(chart, filepath.FromSlash(name))); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s not written: %v", name, err)
		}
	}
	tpl := string(files[GeneratedTemplate])
	for _, want := range []string{
		`{{- define "paddlejob.generated.clusterRoleRules" -}}`,
		`{{- define "paddlejob.generated.roleRules" -}}`,
		`{{- define "paddlejob.generated.leaderElectionRules" -}}`,
		`{{- define "paddlejob.generated.mutatingWebhooks" -}}`,
		`{{- define "paddlejob.generated.validatingWebhooks" -}}`,
		`name: {{ include "paddlejob.webhookServiceName" . }}`,
		`namespace: {{ .Release.Namespace }}`,
		`port: {{ .Values.webhook.port }}`,
	} {
		if !strings.Contains(tpl, want) {
			t.Errorf("the generated template lacks %s", want)
		}
	}
}
