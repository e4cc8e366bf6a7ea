package localcluster

// The Kueue add-on: its manager, webhooks and default queues.

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	paddlev1 "github.com/paddlejob/paddlejob/api/v1"
	"github.com/paddlejob/paddlejob/internal/kube"
	"github.com/paddlejob/paddlejob/internal/pki"
)

// kueueWebhookURL is where the API server calls Kueue's webhooks.
func (b *boot) kueueWebhookURL(path string) string {
	return fmt.Sprintf("https://127.0.0.1:%d%s", b.st.Ports.KueueWebhook, path)
}

// kueueConverted are the CRDs Kueue's kustomization gives a conversion
// webhook (the others convert between their versions by relabelling).
var kueueConverted = []string{"localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters"}

// kueueConversion points the conversion webhook of those CRDs at the
// manager's loopback port, where Kueue's kustomization names its Service.
func (b *boot) kueueConversion(crd *unstructured.Unstructured) error {
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	if !slices.Contains(kueueConverted, plural) {
		return nil
	}
	return unstructured.SetNestedField(crd.Object, map[string]any{
		"strategy": "Webhook",
		"webhook": map[string]any{
			"conversionReviewVersions": []any{"v1"},
			"clientConfig": map[string]any{
				"url":      b.kueueWebhookURL("/convert"),
				"caBundle": b.caBundle(),
			},
		},
	}, "spec", "conversion")
}

func (b *boot) caBundle() string {
	return base64.StdEncoding.EncodeToString(b.ca.CertPEM)
}

// kueueFrameworks are the integrations the local Kueue manages: batch/v1
// Jobs. (PaddleJobs come in through the operator's own integration.)
var kueueFrameworks = []string{"batch/job"}

func (b *boot) startKueue(ctx context.Context) error {
	kc, err := b.addonIdentity(componentKueue)
	if err != nil {
		return err
	}
	dir, err := b.addonDir()
	if err != nil {
		return err
	}
	path, certDir, probes, err := b.writeKueueConfig(dir)
	if err != nil {
		return err
	}
	// With its own certificate management off, the manager reads a
	// certificate for its metrics server from /etc/kueue/metrics/certs, a
	// path of a container image: it runs in a bubblewrap sandbox that sees
	// the host read-only with an /etc of its own holding that path, bound
	// to the webhook's certificate (the metrics server itself is off).
	// bubblewrap ends on the SIGTERM that stops the cluster without waiting
	// for the manager: the manager ends with it, orphaned never.
	args := []string{"bwrap", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--tmpfs", "/etc"}
	for _, f := range []string{"/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/ssl", "/etc/localtime"} {
		if _, err := os.Stat(f); err == nil {
			args = append(args, "--ro-bind", f, f)
		}
	}
	args = append(args, "--ro-bind", certDir, "/etc/kueue/metrics/certs",
		"--", filepath.Join(b.addons[AddonKueue], "kueue-manager"),
		"--config="+path,
		// The visibility API is an aggregated API server of its own,
		// which the local cluster does not register.
		"--feature-gates=VisibilityOnDemand=false",
		"--zap-log-level=info")
	if err := b.launch(ctx, componentKueue, args, []string{"KUBECONFIG=" + kc}, 90*time.Second,
		func() error { return getPlain(ctx, "http://"+probes+"/readyz") }); err != nil {
		return err
	}
	cfg, err := kube.LoadConfig(b.l.kubeconfig(), "")
	if err != nil {
		return err
	}
	hooks, err := b.kueueWebhooks()
	if err != nil {
		return err
	}
	if err := applyAll(ctx, cfg, hooks); err != nil {
		return err
	}
	defaults, err := kube.DecodeManifests([]byte(kueueDefaults()))
	if err != nil {
		return err
	}
	// The webhooks may take a moment to answer through the API server.
	return waitFor(ctx, 60*time.Second, func() error { return applyAll(ctx, cfg, defaults) })
}

// writeKueueConfig writes the Kueue manager's webhook certificate and its
// configuration into dir: the configuration's path, the certificate's
// directory and the manager's probe address.
func (b *boot) writeKueueConfig(dir string) (path, certDir, probes string, err error) {
	certDir = filepath.Join(dir, "kueue-webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return "", "", "", err
	}
	serving, err := b.ca.Issue(pki.Spec{CommonName: "kueue-webhook", Server: true, Hosts: []string{"127.0.0.1"}}, time.Now(), certValidity)
	if err != nil {
		return "", "", "", err
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.crt"), serving.CertPEM, 0o644); err != nil {
		return "", "", "", err
	}
	if err := os.WriteFile(filepath.Join(certDir, "tls.key"), serving.KeyPEM, 0o600); err != nil {
		return "", "", "", err
	}
	probes = "127.0.0.1:" + itoa(b.st.Ports.KueueProbes)
	var fw strings.Builder
	for _, f := range kueueFrameworks {
		fmt.Fprintf(&fw, "  - %q\n", f)
	}
	conf := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: %s
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %q
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
integrations:
  frameworks:
%s  externalFrameworks:
  - %[6]s
multiKueue:
  externalFrameworks:
  - name: %[6]s
`, KueueNamespace, probes, b.st.Ports.KueueWebhook, certDir, fw.String(), paddlev1.KueueFrameworkName)
	path = filepath.Join(dir, "kueue.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return "", "", "", err
	}
	return path, certDir, probes, nil
}

// kueueWebhooks are Kueue's generated webhook configurations, kept to the
// webhooks of Kueue's own kinds and of the integrations enabled here (the
// manager serves no others, and a webhook nobody serves would fail every
// pod, Deployment… the API server sends it), calling the manager at its
// loopback URL.
func (b *boot) kueueWebhooks() ([]*unstructured.Unstructured, error) {
	objs, err := readManifests(b.addonFile(AddonKueue, "config/components/webhook/manifests.yaml"))
	if err != nil {
		return nil, err
	}
	served := []string{"-kueue-x-k8s-io-"}
	for _, f := range kueueFrameworks {
		group, _, _ := strings.Cut(f, "/")
		served = append(served, "-"+strings.ReplaceAll(group, ".", "-")+"-")
	}
	for _, o := range objs {
		o.SetName("kueue-" + o.GetName())
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		var kept []any
		for _, h := range hooks {
			cc := h.(map[string]any)["clientConfig"].(map[string]any)
			path, _, _ := unstructured.NestedString(cc, "service", "path")
			if !slices.ContainsFunc(served, func(s string) bool { return strings.Contains(path, s) }) {
				continue
			}
			delete(cc, "service")
			cc["url"] = b.kueueWebhookURL(path)
			cc["caBundle"] = b.caBundle()
			kept = append(kept, h)
		}
		if err := unstructured.SetNestedSlice(o.Object, kept, "webhooks"); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// kueueDefaults are a ResourceFlavor, a ClusterQueue whose quota is the
// machine's CPUs and memory, and LocalQueue default of namespace default
// feeding it.
func kueueDefaults() string {
	mem := "8Gi"
	if m, err := totalMemory(); err == nil {
		mem = fmt.Sprintf("%dMi", m>>20)
	}
	return fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: default
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: %s
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default
      resources:
      - name: cpu
        nominalQuota: %d
      - name: memory
        nominalQuota: %s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: %s
  namespace: default
spec:
  clusterQueue: %s
`, KueueClusterQueue, runtime.NumCPU(), mem, KueueLocalQueue, KueueClusterQueue)
}
