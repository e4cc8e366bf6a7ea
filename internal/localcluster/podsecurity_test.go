package localcluster

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// --pod-security takes PodSecurity's three levels, and the API server's
// admission configuration enforces the one chosen in every namespace but the
// cluster's own, warning at restricted.
func TestPodSecurityLevels(t *testing.T) {
	for _, level := range []string{"privileged", "baseline", "restricted"} {
		if err := CheckPodSecurityLevel(level); err != nil {
			t.Errorf("%s: %v", level, err)
		}
	}
	for _, bad := range []string{"", "Baseline", "strict"} {
		err := CheckPodSecurityLevel(bad)
		if err == nil || !strings.Contains(err.Error(), "--pod-security") || !strings.Contains(err.Error(), "privileged, baseline, restricted") {
			t.Errorf("%q: %v, want an error naming the flag and the levels", bad, err)
		}
	}
	var cfg struct {
		Plugins []struct {
			Name          string `json:"name"`
			Configuration struct {
				Defaults   map[string]string `json:"defaults"`
				Exemptions struct {
					Namespaces []string `json:"namespaces"`
				} `json:"exemptions"`
			} `json:"configuration"`
		} `json:"plugins"`
	}
	if err := yaml.Unmarshal([]byte(podSecurityAdmission("baseline")), &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Plugins) != 1 || cfg.Plugins[0].Name != "PodSecurity" {
		t.Fatalf("plugins %+v", cfg.Plugins)
	}
	c := cfg.Plugins[0].Configuration
	if c.Defaults["enforce"] != "baseline" || c.Defaults["warn"] != "restricted" {
		t.Errorf("defaults %v", c.Defaults)
	}
	for _, ns := range []string{"kube-system", operatorNS} {
		if !strings.Contains(strings.Join(c.Exemptions.Namespaces, ","), ns) {
			t.Errorf("namespace %s is not exempt: %v", ns, c.Exemptions.Namespaces)
		}
	}
	// A cluster started before there was a level ran privileged: up with
	// the default now names the difference.
	if d := (Settings{}).differences(Settings{PodSecurity: "baseline"}); len(d) != 1 || !strings.Contains(d[0], "--pod-security (runs with privileged, asked baseline)") {
		t.Errorf("differences %q", d)
	}
}
