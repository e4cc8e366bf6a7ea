package install

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/paddlejob/paddlejob/internal/operator"
)

// More than one replica without leader election would run several
// reconcilers at once: the chart refuses to render it, saying why.
func TestChartRefusesReplicasWithoutLeaderElection(t *testing.T) {
	cmd := exec.Command(helmBinary(t), "template", releaseName, chartDir(), "--set", "replicaCount=2", "--set", "leaderElection.enabled=false")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("helm template --set replicaCount=2 --set leaderElection.enabled=false: accepted")
	}
	for _, want := range []string{"replicaCount is 2 with leaderElection.enabled false", "Set leaderElection.enabled: true, or replicaCount: 1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("helm template failed with %s\nwant it to say %q", out, want)
		}
	}
	// Either alone is fine.
	for _, ok := range [][]string{{"replicaCount=2"}, {"leaderElection.enabled=false"}} {
		if out, err := exec.Command(helmBinary(t), "template", releaseName, chartDir(), "--set", ok[0]).CombinedOutput(); err != nil {
			t.Errorf("helm template --set %s: %v\n%s", ok[0], err, out)
		}
	}
}

// The operator keeps its webhook certificate in one Secret, by name: its
// roles may list, watch and update that one only (the rotator asks for it
// by name), and create none, in every rendering.
func TestSecretRoleNamesTheCertificateSecret(t *testing.T) {
	secret := operator.DefaultWebhookOptions().Secret
	for _, r := range operatorRenderings(t) {
		for _, o := range r.objs {
			if o.GetKind() != "Role" && o.GetKind() != "ClusterRole" {
				continue
			}
			for _, rule := range slice(o.Object, "rules") {
				if !slices.Contains(strs(slice(rule, "resources")), "secrets") {
					continue
				}
				verbs, names := strs(slice(rule, "verbs")), strs(slice(rule, "resourceNames"))
				if !slices.Equal(names, []string{secret}) {
					t.Errorf("%s: %s %s may %v the Secrets %v; want only %s", r.name, o.GetKind(), o.GetName(), verbs, names, secret)
				}
				if !slices.Equal(verbs, []string{"list", "update", "watch"}) {
					t.Errorf("%s: %s %s may %v Secrets; want list, update and watch", r.name, o.GetKind(), o.GetName(), verbs)
				}
			}
		}
	}
}

func strs(in []any) []string {
	out := make([]string, 0, len(in))
	for _, v := range in {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}
