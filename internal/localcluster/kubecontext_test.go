package localcluster

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeTestKubeconfig writes a kubeconfig of the named contexts (each with its
// own cluster and user), with current as its current context.
func writeTestKubeconfig(t *testing.T, path, current string, contexts ...string) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	for _, name := range contexts {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + name + ".example:6443", CertificateAuthorityData: []byte("ca of " + name)}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "token of " + name}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "ns-" + name}
	}
	cfg.CurrentContext = current
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

// `up` adds the local cluster as the current context of a kubeconfig that
// holds the user's own; `up` again keeps the context that was current
// first; `down` makes it current again, and the user's contexts never change.
func TestUpAndDownKeepTheUsersContexts(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "config")
	writeTestKubeconfig(t, user, "prod", "prod", "staging")
	t.Setenv("KUBECONFIG", user)
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestKubeconfig(t, layout{home}.kubeconfig(), "admin", "admin")
	st := &State{Home: home}
	name := ContextName(home)

	for _, round := range []string{"up", "up again"} {
		change, err := addContext(clientcmd.NewDefaultPathOptions(), st, false)
		if err != nil {
			t.Fatal(err)
		}
		if change.Previous != "prod" || !change.MadeCurrent || change.File != user {
			t.Errorf("%s: %+v; want prod as the previous context, %s written", round, change, user)
		}
		cfg, err := clientcmd.LoadFromFile(user)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.CurrentContext != name || string(cfg.Clusters[name].CertificateAuthorityData) != "ca of admin" || cfg.AuthInfos[name].Token != "token of admin" {
			t.Fatalf("%s: current %q, cluster %+v, user %+v", round, cfg.CurrentContext, cfg.Clusters[name], cfg.AuthInfos[name])
		}
		for _, other := range []string{"prod", "staging"} {
			if cfg.Contexts[other].Namespace != "ns-"+other || cfg.AuthInfos[other].Token != "token of "+other {
				t.Errorf("%s: the user's context %s changed: %+v", round, other, cfg.Contexts[other])
			}
		}
	}

	change, err := removeContext(clientcmd.NewDefaultPathOptions(), home)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(user)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "prod" || change.Previous != "prod" || cfg.Contexts[name] != nil || cfg.Clusters[name] != nil || cfg.AuthInfos[name] != nil {
		t.Errorf("after down: current %q, ours left: %v", cfg.CurrentContext, cfg.Contexts[name] != nil)
	}
	if len(cfg.Contexts) != 2 || cfg.AuthInfos["staging"].Token != "token of staging" {
		t.Errorf("after down the user's contexts are %v", cfg.Contexts)
	}
}

// With KeepContext the context is added and the current one stays; down
// then changes no current context.
func TestUpKeepingTheCurrentContext(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "config")
	writeTestKubeconfig(t, user, "prod", "prod")
	t.Setenv("KUBECONFIG", user)
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestKubeconfig(t, layout{home}.kubeconfig(), "admin", "admin")
	if _, err := addContext(clientcmd.NewDefaultPathOptions(), &State{Home: home}, true); err != nil {
		t.Fatal(err)
	}
	cfg, _ := clientcmd.LoadFromFile(user)
	if cfg.CurrentContext != "prod" || cfg.Contexts[ContextName(home)] == nil {
		t.Fatalf("current %q, contexts %v", cfg.CurrentContext, cfg.Contexts)
	}
	if change, err := removeContext(clientcmd.NewDefaultPathOptions(), home); err != nil || change.MadeCurrent {
		t.Fatalf("down: %+v, %v", change, err)
	}
	cfg, _ = clientcmd.LoadFromFile(user)
	if cfg.CurrentContext != "prod" || len(cfg.Contexts) != 1 {
		t.Errorf("after down: current %q, contexts %v", cfg.CurrentContext, cfg.Contexts)
	}
}

// A user without a kubeconfig gets one holding the local cluster alone.
func TestUpWritesAKubeconfigWhereThereIsNone(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "kube", "config")
	t.Setenv("KUBECONFIG", user)
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestKubeconfig(t, layout{home}.kubeconfig(), "admin", "admin")
	if _, err := addContext(clientcmd.NewDefaultPathOptions(), &State{Home: home}, false); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(user)
	if err != nil || cfg.CurrentContext != ContextName(home) {
		t.Fatalf("%v: current %q", err, cfg.CurrentContext)
	}
}

func TestContextName(t *testing.T) {
	t.Setenv("HOME", "/home/someone")
	if got := ContextName("/home/someone/.paddlejob"); got != "paddlejob" {
		t.Errorf("default home: %q", got)
	}
	a, b := ContextName("/tmp/a"), ContextName("/tmp/b")
	if a == b || len(a) != len("paddlejob-")+8 {
		t.Errorf("other homes: %q, %q", a, b)
	}
}
