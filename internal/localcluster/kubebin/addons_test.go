package kubebin

import (
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
)

// TestCoreDNSMainLinksThePluginsGiven: the generated main package parses and
// imports each plugin and CoreDNS's main, nothing else.
func TestCoreDNSMainLinksThePluginsGiven(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", coreDNSMain([]string{"kubernetes", "ready"}), parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		got = append(got, path)
	}
	want := []string{"github.com/coredns/coredns/plugin/kubernetes", "github.com/coredns/coredns/plugin/ready", "github.com/coredns/coredns/coremain"}
	if f.Name.Name != "main" || !slices.Equal(got, want) {
		t.Errorf("package %s imports %v, want main importing %v", f.Name.Name, got, want)
	}
}

// TestAddonCacheName: another plugin set is another build in the cache.
func TestAddonCacheName(t *testing.T) {
	plain := Addons[AddonKueue]
	if got := plain.cacheName(); got != "kueue-"+plain.Version {
		t.Errorf("kueue's build is cached as %q", got)
	}
	other := ClusterDNS
	other.Main = coreDNSMain([]string{"kubernetes"})
	if ClusterDNS.cacheName() == other.cacheName() {
		t.Errorf("two plugin sets share the cache entry %q", other.cacheName())
	}
}
