package install

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The chart's Grafana dashboard (dashboards/paddlejob-operator.json) is a
// dashboard Grafana loads: every field one of Grafana's dashboard model (no
// misspelt or misplaced field), panels on its 24-column grid without
// overlapping, each querying the dashboard's Prometheus variable with
// well-formed PromQL that names only variables the dashboard defines and
// metrics the operator or controller-runtime export; and every metric of
// the operator has a panel. The chart installs it, byte for byte, for
// Grafana's sidecar, only when asked.
func TestGrafanaDashboard(t *testing.T) {
	path := filepath.Join(chartDir(), "dashboards", "paddlejob-operator.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := decodeDashboard(t, raw)
	checkLayout(t, d)
	vars := checkVariables(t, d)

	exported := operatorMetrics(t)
	external := controllerRuntimeMetrics(t)
	used := map[string]bool{}
	metricName := regexp.MustCompile(`\b(?:paddlejob|controller_runtime|workqueue)_[a-z_]+\b`)
	varRef := regexp.MustCompile(`\$(?:\{)?(\w+)`)
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			where := fmt.Sprintf("panel %q, target %s", p.Title, tg.RefID)
			if err := balanced(tg.Expr); err != nil {
				t.Errorf("%s: %s: %v", where, tg.Expr, err)
			}
			for _, m := range varRef.FindAllStringSubmatch(tg.Expr, -1) {
				if !vars[m[1]] && !slices.Contains([]string{"__rate_interval", "__interval", "__range"}, m[1]) {
					t.Errorf("%s: $%s is no variable of the dashboard", where, m[1])
				}
			}
			for _, name := range metricName.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
				switch {
				case exported[base]:
					used[base] = true
				case external[base]:
				default:
					t.Errorf("%s: %s is no metric the operator exports (%s) nor controller-runtime's", where, name, strings.Join(sortedKeys(exported), ", "))
				}
			}
		}
	}
	for name := range exported {
		if !used[name] {
			t.Errorf("the operator's metric %s has no panel in %s", name, path)
		}
	}
	// The panels of the reconciles select the operator's controller by name.
	setup, err := os.ReadFile(filepath.Join(root, "internal", "operator", "controller", "setup.go"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(`controller=\"paddlejob\"`)) && !bytes.Contains(setup, []byte(`Named("paddlejob")`)) {
		t.Errorf(`the dashboard selects controller="paddlejob", but the operator's controller is no longer named so (internal/operator/controller/setup.go)`)
	}

	// Off by default; on, a ConfigMap the sidecar finds, holding the file.
	if cm := find(chartDefault(t).objs, "ConfigMap", operatorNS, "paddlejob-grafana-dashboard"); cm != nil {
		t.Error("the chart installs the Grafana dashboard by default")
	}
	r := helmTemplate(t, operatorNS, "values-grafana.yaml")
	cm := find(r, "ConfigMap", "monitoring", "paddlejob-grafana-dashboard")
	if cm == nil {
		t.Fatalf("values-grafana.yaml: no ConfigMap monitoring/paddlejob-grafana-dashboard among %v", keys(r))
	}
	if l := stringMap(cm.Object, "metadata", "labels"); l["grafana_dashboard"] != "1" {
		t.Errorf("ConfigMap labels %v: want grafana_dashboard=1, the sidecar's default label", l)
	}
	if a := stringMap(cm.Object, "metadata", "annotations"); a["grafana_folder"] != "PaddlePaddle" {
		t.Errorf("ConfigMap annotations %v: want values' grafana_folder", a)
	}
	if got := stringMap(cm.Object, "data")["paddlejob-operator.json"]; got != strings.TrimSuffix(string(raw), "\n") {
		t.Errorf("the ConfigMap's paddlejob-operator.json is not %s", path)
	}
}

type grafanaDashboard struct {
	Title         string   `json:"title"`
	UID           string   `json:"uid"`
	Description   string   `json:"description"`
	Tags          []string `json:"tags"`
	Editable      bool     `json:"editable"`
	GraphTooltip  int      `json:"graphTooltip"`
	SchemaVersion int      `json:"schemaVersion"`
	Version       int      `json:"version"`
	Refresh       string   `json:"refresh"`
	Time          struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"time"`
	Timezone    string `json:"timezone"`
	Links       []any  `json:"links"`
	Annotations struct {
		List []struct {
			BuiltIn    int               `json:"builtIn"`
			Datasource grafanaDatasource `json:"datasource"`
			Enable     bool              `json:"enable"`
			Hide       bool              `json:"hide"`
			IconColor  string            `json:"iconColor"`
			Name       string            `json:"name"`
			Type       string            `json:"type"`
		} `json:"list"`
	} `json:"annotations"`
	Templating struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaVariable struct {
	Name       string             `json:"name"`
	Label      string             `json:"label"`
	Type       string             `json:"type"`
	Datasource *grafanaDatasource `json:"datasource"`
	// A datasource variable's query is the plugin type; a query
	// variable's, the PromQL and a refId.
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Refresh    int             `json:"refresh"`
	IncludeAll bool            `json:"includeAll"`
	Multi      bool            `json:"multi"`
	AllValue   string          `json:"allValue"`
	Current    map[string]any  `json:"current"`
	Sort       int             `json:"sort"`
	Hide       int             `json:"hide"`
	Options    []any           `json:"options"`
	Regex      string          `json:"regex"`
}

type grafanaPanel struct {
	ID          int                `json:"id"`
	Type        string             `json:"type"`
	Title       string             `json:"title"`
	Description string             `json:"description"`
	Collapsed   bool               `json:"collapsed"`
	Datasource  *grafanaDatasource `json:"datasource"`
	GridPos     struct {
		X int `json:"x"`
		Y int `json:"y"`
		W int `json:"w"`
		H int `json:"h"`
	} `json:"gridPos"`
	Targets []struct {
		Datasource   grafanaDatasource `json:"datasource"`
		RefID        string            `json:"refId"`
		Expr         string            `json:"expr"`
		LegendFormat string            `json:"legendFormat"`
	} `json:"targets"`
	FieldConfig *struct {
		Defaults struct {
			Unit string   `json:"unit"`
			Min  *float64 `json:"min"`
			Max  *float64 `json:"max"`
		} `json:"defaults"`
		Overrides []any `json:"overrides"`
	} `json:"fieldConfig"`
	Options map[string]any `json:"options"`
	Panels  []any          `json:"panels"`
}

func decodeDashboard(t *testing.T, raw []byte) grafanaDashboard {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var d grafanaDashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("the dashboard is not a Grafana dashboard model: %v", err)
	}
	if d.Title == "" || !regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`).MatchString(d.UID) {
		t.Errorf("title %q, uid %q: want a title and a uid of at most 40 letters, digits, '-' and '_'", d.Title, d.UID)
	}
	// 36 and later: the timeseries panel and datasources named by uid.
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion %d: want 36 or later", d.SchemaVersion)
	}
	return d
}

// checkLayout: unique ids, known panel kinds, on the grid, no overlap.
func checkLayout(t *testing.T, d grafanaDashboard) {
	t.Helper()
	ids := map[int]bool{}
	cells := map[[2]int]string{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.X < 0 || g.Y < 0 || g.W < 1 || g.H < 1 || g.X+g.W > 24 {
			t.Errorf("panel %q at %+v: off Grafana's 24-column grid", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := cells[[2]int{x, y}]; ok {
					t.Errorf("panels %q and %q overlap at column %d, row %d", other, p.Title, x, y)
				}
				cells[[2]int{x, y}] = p.Title
			}
		}
		switch p.Type {
		case "row":
			if g.W != 24 || g.H != 1 || len(p.Targets) > 0 {
				t.Errorf("row %q: want the grid's width, one unit high, no queries", p.Title)
			}
		case "timeseries", "stat":
			if p.Title == "" || p.Description == "" || len(p.Targets) == 0 {
				t.Errorf("panel %d: want a title, a description and a query", p.ID)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if refs[tg.RefID] || tg.RefID == "" || strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q: target %q: want a refId of its own and a query", p.Title, tg.RefID)
				}
				refs[tg.RefID] = true
				if tg.Datasource != (grafanaDatasource{Type: "prometheus", UID: "${datasource}"}) {
					t.Errorf("panel %q, target %s: datasource %+v, want the dashboard's Prometheus variable", p.Title, tg.RefID, tg.Datasource)
				}
			}
			if p.Datasource == nil || *p.Datasource != (grafanaDatasource{Type: "prometheus", UID: "${datasource}"}) {
				t.Errorf("panel %q: datasource %v, want the dashboard's Prometheus variable", p.Title, p.Datasource)
			}
		default:
			t.Errorf("panel %q: type %q, want row, timeseries or stat", p.Title, p.Type)
		}
	}
}

// checkVariables returns the dashboard's variables: a Prometheus
// datasource one, and queries of it that use only variables before them.
func checkVariables(t *testing.T, d grafanaDashboard) map[string]bool {
	t.Helper()
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			var q string
			if err := json.Unmarshal(v.Query, &q); err != nil || q != "prometheus" {
				t.Errorf("variable %s: query %s, want the plugin prometheus", v.Name, v.Query)
			}
		case "query":
			var q struct {
				Query string `json:"query"`
				RefID string `json:"refId"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil || q.Query != v.Definition || !strings.HasPrefix(q.Query, "label_values(") {
				t.Errorf("variable %s: query %s: want label_values(...), as its definition", v.Name, v.Query)
			}
			if err := balanced(q.Query); err != nil {
				t.Errorf("variable %s: %v", v.Name, err)
			}
			for _, m := range regexp.MustCompile(`\$(\w+)`).FindAllStringSubmatch(q.Query, -1) {
				if !vars[m[1]] {
					t.Errorf("variable %s uses $%s, which is not defined before it", v.Name, m[1])
				}
			}
			if v.Datasource == nil || v.Datasource.UID != "${datasource}" {
				t.Errorf("variable %s: datasource %v, want the Prometheus variable", v.Name, v.Datasource)
			}
		default:
			t.Errorf("variable %s: type %q", v.Name, v.Type)
		}
		vars[v.Name] = true
	}
	if !vars["datasource"] {
		t.Error("no datasource variable: the panels cannot name their Prometheus")
	}
	return vars
}

// balanced checks a PromQL expression's brackets and quotes.
func balanced(expr string) error {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	var quote rune
	for i, c := range expr {
		switch {
		case quote != 0:
			if c == quote && (i == 0 || expr[i-1] != '\\') {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, c)
		case pairs[c] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[c] {
				return fmt.Errorf("unbalanced %q at %d", c, i)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if quote != 0 || len(stack) > 0 {
		return fmt.Errorf("unclosed %q", append(stack, quote))
	}
	return nil
}

// operatorMetrics are the metric names the operator's sources define.
func operatorMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	def := regexp.MustCompile(`(?:Name:\s*|NewDesc\()"(paddlejob_[a-z_]+)"`)
	err := filepath.WalkDir(filepath.Join(root, "internal", "operator"), func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		src, err := os.ReadFile(p)
		for _, m := range def.FindAllSubmatch(src, -1) {
			names[string(m[1])] = true
		}
		return err
	})
	if err != nil || len(names) == 0 {
		t.Fatalf("no metric found in internal/operator: %v", err)
	}
	return names
}

// controllerRuntimeMetrics are the metric names of controller-runtime's
// reconciles and work queues, from the module's sources.
func controllerRuntimeMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/controller-runtime").Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/controller-runtime: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	names := map[string]bool{}
	src, err := os.ReadFile(filepath.Join(dir, "pkg", "internal", "controller", "metrics", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`Name:\s*"(controller_runtime_[a-z_]+)"`).FindAllSubmatch(src, -1) {
		names[string(m[1])] = true
	}
	src, err = os.ReadFile(filepath.Join(dir, "pkg", "metrics", "workqueue.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\w+Key\s*=\s*"([a-z_]+)"`).FindAllSubmatch(src, -1) {
		names["workqueue_"+string(m[1])] = true
	}
	if !names["controller_runtime_reconcile_total"] || !names["workqueue_depth"] {
		t.Fatalf("controller-runtime's metric names not found in %s: %v", dir, sortedKeys(names))
	}
	return names
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
