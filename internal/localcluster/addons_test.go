package localcluster

import (
	"slices"
	"strings"
	"testing"
)

func TestParseAddonsOrdersAndDeduplicates(t *testing.T) {
	got, err := ParseAddons([]string{"kueue", " volcano", "coscheduling", "volcano", ""})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{AddonVolcano, AddonCoscheduling, AddonKueue}; !slices.Equal(got, want) {
		t.Errorf("ParseAddons = %v, want %v", got, want)
	}
}

func TestParseAddonsRefusesUnknownNames(t *testing.T) {
	_, err := ParseAddons([]string{"volcano", "yunikorn"})
	if err == nil || !strings.Contains(err.Error(), `"yunikorn"`) || !strings.Contains(err.Error(), "coscheduling") {
		t.Errorf("ParseAddons(yunikorn) = %v, want an error naming it and the known add-ons", err)
	}
}

// A cluster started without add-ons has no add-on ports: Down and the tests
// check only the ports the cluster really listens on.
func TestPortsListOnlyWhatTheClusterRuns(t *testing.T) {
	p := Ports{EtcdClient: 2379, APIServer: 6443, Volcano: 0, KueueWebhook: 9443}
	if got := p.All(); !slices.Equal(got, []int{2379, 6443, 9443}) {
		t.Errorf("All() = %v, want [2379 6443 9443]", got)
	}
}
