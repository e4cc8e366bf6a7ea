package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

// clusterDomain is the DNS domain of Service and pod names.
const clusterDomain = "cluster.local"

// hostEntry is a pod as its /etc/hosts and its peers' name it.
type hostEntry struct {
	IP, Hostname, Subdomain, Namespace string
	// UTSName is the pod's own hostname when it is not Hostname (a
	// hostNetwork pod has the node's): its own line names it too.
	UTSName string
}

// names are the names that resolve to the pod, canonical name first. A pod
// with a subdomain is also <hostname>.<subdomain>: the name a headless Service
// gives it in DNS, which this node stands in for with hosts files.
func (e hostEntry) names() []string {
	if e.Subdomain == "" {
		return []string{e.Hostname}
	}
	short := e.Hostname + "." + e.Subdomain
	return []string{short + "." + e.Namespace + ".svc." + clusterDomain, short, e.Hostname}
}

// hostsFileContent renders a pod's /etc/hosts: the usual localhost lines, the
// pod itself, its peers (the other live pods of its namespace and subdomain),
// then the pod's hostAliases.
func hostsFileContent(self hostEntry, peers []hostEntry, aliases []corev1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file (paddlejob node).\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	selfNames := self.names()
	if self.UTSName != "" && !slices.Contains(selfNames, self.UTSName) {
		selfNames = append(selfNames, self.UTSName)
	}
	fmt.Fprintf(&b, "%s\t%s\n", self.IP, strings.Join(selfNames, " "))

	sorted := append([]hostEntry(nil), peers...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Hostname < sorted[j].Hostname })
	if len(sorted) > 0 {
		fmt.Fprintf(&b, "# Pods of subdomain %s.\n", self.Subdomain)
	}
	for _, p := range sorted {
		fmt.Fprintf(&b, "%s\t%s\n", p.IP, strings.Join(p.names(), " "))
	}

	if len(aliases) > 0 {
		b.WriteString("# Entries added by HostAliases.\n")
	}
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

// writeFileInPlace makes the file at path hold content, keeping its inode: it
// is bind-mounted into sandboxes, where a file renamed over it would not be
// seen. It reports whether the content changed.
func writeFileInPlace(path string, content []byte) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false, err
	}
	defer f.Close()
	current, err := io.ReadAll(f)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	if bytes.Equal(current, content) {
		return false, nil
	}
	if _, err := f.WriteAt(content, 0); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Truncate(int64(len(content))); err != nil {
		return false, fmt.Errorf("truncating %s: %w", path, err)
	}
	return true, nil
}

// hostsFiles keeps the hosts files of the node's pods: each live pod of a
// namespace and subdomain lists the others, as a headless Service's DNS
// would.
type hostsFiles struct {
	log logr.Logger
	// pods lists the node's current pods.
	pods func() []*podRuntime
	// mu serializes hosts file writes and guards podRuntime.inHosts.
	mu sync.Mutex
}

// join adds a pod to the hosts files of its namespace and subdomain.
func (h *hostsFiles) join(r *podRuntime) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.inHosts = true
	return h.writeLocked(r.namespace, r.podCopy().Spec.Subdomain)
}

// leave removes a pod that stopped from its peers' hosts files.
func (h *hostsFiles) leave(r *podRuntime) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !r.inHosts {
		return
	}
	r.inHosts = false
	if err := h.writeLocked(r.namespace, r.podCopy().Spec.Subdomain); err != nil {
		h.log.Error(err, "Cannot update hosts files", "namespace", r.namespace)
	}
}

// writeLocked rewrites the hosts files of the live pods of a namespace
// and subdomain, each listing the others (a pod without a subdomain lists
// only itself).
func (h *hostsFiles) writeLocked(namespace, subdomain string) error {
	type member struct {
		r       *podRuntime
		entry   hostEntry
		aliases []corev1.HostAlias
	}
	var members []member
	for _, r := range h.pods() {
		if !r.inHosts || r.namespace != namespace {
			continue
		}
		pod := r.podCopy()
		if pod.Spec.Subdomain != subdomain {
			continue
		}
		members = append(members, member{r: r, aliases: pod.Spec.HostAliases,
			entry: hostEntry{IP: r.ip, Hostname: dnsHostname(pod), Subdomain: subdomain, Namespace: namespace, UTSName: r.hostname}})
	}
	var errs []error
	for _, m := range members {
		var peers []hostEntry
		if subdomain != "" {
			for _, o := range members {
				if o.r != m.r {
					peers = append(peers, o.entry)
				}
			}
		}
		if _, err := writeFileInPlace(m.r.hostsPath(), hostsFileContent(m.entry, peers, m.aliases)); err != nil {
			errs = append(errs, fmt.Errorf("hosts file of pod %s: %w", m.r.key, err))
		}
	}
	return errors.Join(errs...)
}
