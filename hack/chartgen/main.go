// Command chartgen regenerates the parts of the Helm chart (charts/paddlejob)
// that must be exactly what config/ holds, so that the chart cannot drift
// from the manifests controller-gen generates:
//
//   - crds/: byte-for-byte copies of config/crd/bases/*.yaml;
//   - templates/_generated.tpl: the rules of the operator's ClusterRole and
//     Roles (config/rbac/role.yaml, config/rbac/leader_election_role.yaml)
//     and the webhooks of the admission webhook configurations
//     (config/webhook/manifests.yaml), as named templates the chart's
//     templates include, calling the chart's webhook Service (its name,
//     the release namespace, the port of values' webhook.port).
//
// `make manifests` runs it from the repository's root after controller-gen:
//
//	go run ./hack/chartgen [-config config] [-chart charts/paddlejob]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	configDir := flag.String("config", "config", "the kustomize config directory")
	chartDir := flag.String("chart", filepath.Join("charts", "paddlejob"), "the chart directory")
	flag.Parse()
	files, err := Generate(*configDir)
	if err == nil {
		err = Write(*chartDir, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartgen:", err)
		os.Exit(1)
	}
}

// GeneratedTemplate is the chart's generated template, relative to the chart.
const GeneratedTemplate = "templates/_generated.tpl"

// CRDDir is the chart's CRD directory, relative to the chart.
const CRDDir = "crds"

// ruleSet is a role of config/rbac whose rules the chart includes.
type ruleSet struct {
	define, file, kind, name string
}

// ruleSets are every Role and ClusterRole the config/rbac files read here
// may hold. Any other role in them is an error: the chart would miss it.
var ruleSets = []ruleSet{
	{clusterRoleRules, "rbac/role.yaml", "ClusterRole", "paddlejob-operator"},
	{"paddlejob.generated.roleRules", "rbac/role.yaml", "Role", "paddlejob-operator"},
	{"paddlejob.generated.leaderElectionRules", "rbac/leader_election_role.yaml", "Role", "paddlejob-operator-leader-election"},
}

const (
	clusterRoleRules = "paddlejob.generated.clusterRoleRules"
	kueueRules       = "paddlejob.generated.kueueRules"
)

// kueueGroups are the API groups only the Kueue integration reads or
// writes: Kueue's, and the PriorityClasses a Workload's priority may come
// from.
var kueueGroups = []string{"kueue.x-k8s.io", "scheduling.k8s.io"}

// splitKueueRules separates the rules of the Kueue groups from the others.
func splitKueueRules(rules []any) (others, kueue []any) {
	for _, r := range rules {
		groups, _ := nested(r.(map[string]any), "apiGroups").([]any)
		only := len(groups) > 0
		for _, g := range groups {
			only = only && slices.Contains(kueueGroups, fmt.Sprint(g))
		}
		if only {
			kueue = append(kueue, r)
		} else {
			others = append(others, r)
		}
	}
	return others, kueue
}

// webhookSet is a generated webhook configuration whose webhooks the chart
// includes.
type webhookSet struct {
	define, kind, name string
}

// webhookSets are the configurations config/webhook/manifests.yaml holds.
var webhookSets = []webhookSet{
	{"paddlejob.generated.mutatingWebhooks", "MutatingWebhookConfiguration", "mutating-webhook-configuration"},
	{"paddlejob.generated.validatingWebhooks", "ValidatingWebhookConfiguration", "validating-webhook-configuration"},
}

// The webhooks' service reference is the chart's: placeholders, marshalled
// as plain strings, then replaced by template actions.
const (
	servicePlaceholder   = "PADDLEJOB_CHARTGEN_WEBHOOK_SERVICE"
	namespacePlaceholder = "PADDLEJOB_CHARTGEN_WEBHOOK_NAMESPACE"
	portPlaceholder      = "PADDLEJOB_CHARTGEN_WEBHOOK_PORT"
	serviceAction        = `{{ include "paddlejob.webhookServiceName" . }}`
	namespaceAction      = `{{ .Release.Namespace }}`
	portAction           = `{{ .Values.webhook.port }}`
)

// Generate returns the chart's generated files, keyed by their path in the
// chart (slash-separated), from the config directory.
func Generate(configDir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	crds, err := filepath.Glob(filepath.Join(configDir, "crd", "bases", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CRD in %s", filepath.Join(configDir, "crd", "bases"))
	}
	for _, path := range crds {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		files[CRDDir+"/"+filepath.Base(path)] = data
	}
	tpl, err := generatedTemplate(configDir)
	if err != nil {
		return nil, err
	}
	files[GeneratedTemplate] = tpl
	return files, nil
}

// Write writes files into the chart and removes CRDs of the chart that
// config/ no longer has.
func Write(chartDir string, files map[string][]byte) error {
	if err := os.MkdirAll(filepath.Join(chartDir, CRDDir), 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(chartDir, CRDDir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, path := range old {
		if _, ok := files[CRDDir+"/"+filepath.Base(path)]; !ok {
			if err := os.Remove(path); err != nil {
				return err
			}
		}
	}
	for _, name := range sortedKeys(files) {
		path := filepath.Join(chartDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

func generatedTemplate(configDir string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{{/*
Code generated by hack/chartgen from config/rbac and config/webhook. DO NOT EDIT.
Run "make manifests" (or "go run ./hack/chartgen") after changing the markers
or those files.
*/}}
`)
	if err := writeRBACRules(&b, configDir); err != nil {
		return nil, err
	}
	if err := writeWebhooks(&b, configDir); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeRBACRules writes a template of the rules of each of ruleSets' roles
// (and the Kueue integration's apart), refusing roles the chart does not
// know.
func writeRBACRules(b *bytes.Buffer, configDir string) error {
	roles := map[string][]map[string]any{} // file -> its roles
	for _, rs := range ruleSets {
		if _, ok := roles[rs.file]; ok {
			continue
		}
		objs, err := readObjects(filepath.Join(configDir, filepath.FromSlash(rs.file)))
		if err != nil {
			return err
		}
		for _, o := range objs {
			kind, name := str(o, "kind"), str(o, "metadata", "name")
			if kind != "Role" && kind != "ClusterRole" {
				continue
			}
			if !knownRole(rs.file, kind, name) {
				return fmt.Errorf("%s: %s %q is not one the chart installs: add it to hack/chartgen's ruleSets and the chart's templates", rs.file, kind, name)
			}
			roles[rs.file] = append(roles[rs.file], o)
		}
	}
	for _, rs := range ruleSets {
		var found map[string]any
		for _, o := range roles[rs.file] {
			if str(o, "kind") == rs.kind && str(o, "metadata", "name") == rs.name {
				if found != nil {
					return fmt.Errorf("%s: %s %q twice", rs.file, rs.kind, rs.name)
				}
				found = o
			}
		}
		if found == nil {
			return fmt.Errorf("%s: no %s %q", rs.file, rs.kind, rs.name)
		}
		rules, _ := found["rules"].([]any)
		if len(rules) == 0 {
			return fmt.Errorf("%s: %s %q has no rules", rs.file, rs.kind, rs.name)
		}
		doc := fmt.Sprintf("The rules of the %s %s (config/%s)", rs.kind, rs.name, rs.file)
		if rs.define == clusterRoleRules {
			// The Kueue integration's rules, granted only with kueue.enabled.
			var kueue []any
			rules, kueue = splitKueueRules(rules)
			if len(kueue) == 0 {
				return fmt.Errorf("%s: %s %q has no rules for Kueue's API", rs.file, rs.kind, rs.name)
			}
			if err := define(b, kueueRules, doc+", for the Kueue integration.", kueue, nil); err != nil {
				return err
			}
			doc += ", but the Kueue integration's"
		}
		if err := define(b, rs.define, doc+".", rules, nil); err != nil {
			return err
		}
	}
	return nil
}

// writeWebhooks writes a template of each of webhookSets' webhooks, pointed
// at the chart's webhook Service.
func writeWebhooks(b *bytes.Buffer, configDir string) error {
	const webhookFile = "webhook/manifests.yaml"
	objs, err := readObjects(filepath.Join(configDir, filepath.FromSlash(webhookFile)))
	if err != nil {
		return err
	}
	configs := map[string]map[string]any{}
	for _, o := range objs {
		kind, name := str(o, "kind"), str(o, "metadata", "name")
		known := false
		for _, ws := range webhookSets {
			known = known || (ws.kind == kind && ws.name == name)
		}
		if !known {
			return fmt.Errorf("%s: %s %q is not one the chart installs: add it to hack/chartgen's webhookSets and the chart's templates", webhookFile, kind, name)
		}
		if configs[kind] != nil {
			return fmt.Errorf("%s: two %ss", webhookFile, kind)
		}
		configs[kind] = o
	}
	for _, ws := range webhookSets {
		o := configs[ws.kind]
		if o == nil {
			return fmt.Errorf("%s: no %s %q", webhookFile, ws.kind, ws.name)
		}
		webhooks, _ := o["webhooks"].([]any)
		if len(webhooks) == 0 {
			return fmt.Errorf("%s: %s %q has no webhooks", webhookFile, ws.kind, ws.name)
		}
		for _, w := range webhooks {
			wm, _ := w.(map[string]any)
			svc, _ := nested(wm, "clientConfig", "service").(map[string]any)
			if svc == nil {
				return fmt.Errorf("%s: webhook %q does not call a service: the chart cannot point it at the operator", webhookFile, str(wm, "name"))
			}
			svc["name"], svc["namespace"], svc["port"] = servicePlaceholder, namespacePlaceholder, portPlaceholder
		}
		replace := strings.NewReplacer(servicePlaceholder, serviceAction, namespacePlaceholder, namespaceAction, portPlaceholder, portAction)
		if err := define(b, ws.define, fmt.Sprintf("The webhooks of the %s (config/%s), calling the chart's webhook Service.", ws.kind, webhookFile), webhooks, replace); err != nil {
			return err
		}
	}
	return nil
}

// define writes a named template whose body is v as YAML. Template delimiters
// in the data itself are refused: they would be executed.
func define(b *bytes.Buffer, name, doc string, v any, replace *strings.Replacer) error {
	out, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	body := string(out)
	if strings.Contains(body, "{{") || strings.Contains(body, "}}") {
		return fmt.Errorf("%s: the data holds a template delimiter", name)
	}
	if replace != nil {
		body = replace.Replace(body)
	}
	fmt.Fprintf(b, "\n{{/* %s */}}\n{{- define %q -}}\n%s{{- end }}\n", doc, name, body)
	return nil
}

func knownRole(file, kind, name string) bool {
	for _, rs := range ruleSets {
		if rs.file == file && rs.kind == kind && rs.name == name {
			return true
		}
	}
	return false
}

// readObjects reads the YAML documents of a file.
func readObjects(path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var objs []map[string]any
	for i, doc := range splitDocuments(data) {
		var o map[string]any
		if err := yaml.Unmarshal(doc, &o); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		if len(o) > 0 {
			objs = append(objs, o)
		}
	}
	return objs, nil
}

// splitDocuments splits a YAML stream at its "---" lines.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if t := bytes.TrimRight(line, " \t\r\n"); bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			docs = append(docs, cur)
			cur = nil
			continue
		}
		cur = append(cur, line...)
	}
	return append(docs, cur)
}

func nested(o map[string]any, keys ...string) any {
	var v any = o
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func str(o map[string]any, keys ...string) string {
	s, _ := nested(o, keys...).(string)
	return s
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
