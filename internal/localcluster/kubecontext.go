package localcluster

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/paddlejob/paddlejob/internal/fsutil"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The kind and minikube convention: `paddlejob up` adds the local cluster to
// the user's kubeconfig as a context of its own and makes it current, so
// kubectl, the CLI's job commands and the SDKs all use it with nothing to
// set; `paddlejob down` removes it and makes the context that was current
// before current again. Every other cluster, user and context is kept.

// ContextName is the kubeconfig context (and cluster and user) name of the
// local cluster in home: "paddlejob" for the default home, else
// "paddlejob-" and a hash of the home's path.
func ContextName(home string) string {
	abs, err := filepath.Abs(home)
	if err != nil {
		abs = home
	}
	if def, err := filepath.Abs(defaultUserHome()); err == nil && def == abs {
		return "paddlejob"
	}
	return fmt.Sprintf("paddlejob-%x", sha256.Sum256([]byte(abs)))[:len("paddlejob-")+8]
}

// defaultUserHome is the home `up` uses without --home or $PADDLEJOB_HOME.
func defaultUserHome() string {
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".paddlejob")
	}
	return filepath.Join(os.TempDir(), "paddlejob")
}

// ContextChange says what addContext did to the user's kubeconfig.
type ContextChange struct {
	// Name is the context added.
	Name string
	// File is the kubeconfig file written.
	File string
	// Previous is the context that was current before ("" for none), made
	// current again by removeContext.
	Previous string
	// MadeCurrent says the context was made current.
	MadeCurrent bool
}

// addContext writes the cluster's server, CA and admin credentials into the
// kubeconfig access points to (a user's: $KUBECONFIG or ~/.kube/config), as
// context name, and makes it current unless keep is set; the previous
// current context is recorded in the cluster's home for removeContext.
func addContext(access clientcmd.ConfigAccess, st *State, keep bool) (ContextChange, error) {
	name := ContextName(st.Home)
	admin, err := clientcmd.LoadFromFile(st.Kubeconfig())
	if err == nil {
		// The credentials go in as data: the user's kubeconfig must not
		// point into the cluster's home.
		err = clientcmdapi.FlattenConfig(admin)
	}
	if err != nil {
		return ContextChange{}, fmt.Errorf("reading the cluster's kubeconfig: %w", err)
	}
	adminCtx := admin.Contexts[admin.CurrentContext]
	if adminCtx == nil || admin.Clusters[adminCtx.Cluster] == nil || admin.AuthInfos[adminCtx.AuthInfo] == nil {
		return ContextChange{}, fmt.Errorf("%s names no current context", st.Kubeconfig())
	}
	cfg, err := access.GetStartingConfig()
	if err != nil {
		return ContextChange{}, fmt.Errorf("reading your kubeconfig: %w", err)
	}
	change := ContextChange{Name: name, File: access.GetDefaultFilename(), Previous: cfg.CurrentContext}
	if cfg.CurrentContext == name {
		// up again on a running cluster: keep what was recorded first.
		if prev, err := os.ReadFile(layout{st.Home}.previousContextFile()); err == nil {
			change.Previous = string(prev)
		}
	}
	cluster := admin.Clusters[adminCtx.Cluster].DeepCopy()
	cluster.LocationOfOrigin = ""
	user := admin.AuthInfos[adminCtx.AuthInfo].DeepCopy()
	user.LocationOfOrigin = ""
	cfg.Clusters[name] = cluster
	cfg.AuthInfos[name] = user
	kctx := clientcmdapi.NewContext()
	kctx.Cluster, kctx.AuthInfo = name, name
	if old := cfg.Contexts[name]; old != nil {
		kctx.Namespace = old.Namespace // a namespace the user chose stays
	}
	cfg.Contexts[name] = kctx
	if !keep {
		cfg.CurrentContext = name
		change.MadeCurrent = true
	}
	if err := fsutil.WriteFileAtomic(layout{st.Home}.previousContextFile(), []byte(change.Previous), 0o600); err != nil {
		return ContextChange{}, err
	}
	if err := clientcmd.ModifyConfig(access, *cfg, false); err != nil {
		return ContextChange{}, fmt.Errorf("writing your kubeconfig %s: %w", change.File, err)
	}
	return change, nil
}

// removeContext removes the context addContext added for the cluster in
// home, its cluster and user, and, when it is current, makes the context
// that was current before current again. It changes nothing else, and
// nothing when the kubeconfig has no such context.
func removeContext(access clientcmd.ConfigAccess, home string) (ContextChange, error) {
	name := ContextName(home)
	cfg, err := access.GetStartingConfig()
	if err != nil {
		return ContextChange{}, fmt.Errorf("reading your kubeconfig: %w", err)
	}
	change := ContextChange{Name: name, File: access.GetDefaultFilename()}
	if cfg.Contexts[name] == nil {
		return change, nil
	}
	delete(cfg.Contexts, name)
	delete(cfg.Clusters, name)
	delete(cfg.AuthInfos, name)
	if cfg.CurrentContext == name {
		prev, err := os.ReadFile(layout{home}.previousContextFile())
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return ContextChange{}, err
		}
		change.Previous = string(prev)
		if cfg.Contexts[change.Previous] == nil {
			change.Previous = "" // removed meanwhile: leave none current
		}
		cfg.CurrentContext = change.Previous
		change.MadeCurrent = true
	}
	if err := clientcmd.ModifyConfig(access, *cfg, false); err != nil {
		return ContextChange{}, fmt.Errorf("writing your kubeconfig %s: %w", change.File, err)
	}
	return change, nil
}
