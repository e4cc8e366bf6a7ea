package node

import (
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPodResolvConf(t *testing.T) {
	const dns = "10.96.0.10"
	clusterSearches := []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local"}
	pod := func(policy corev1.DNSPolicy, hostNetwork bool, cfg *corev1.PodDNSConfig) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team"},
			Spec: corev1.PodSpec{DNSPolicy: policy, HostNetwork: hostNetwork, DNSConfig: cfg}}
	}
	tests := []struct {
		name       string
		pod        *corev1.Pod
		clusterDNS string
		want       resolvConf
		wantErr    string
	}{
		{name: "unset policy is ClusterFirst", pod: pod("", false, nil), clusterDNS: dns,
			want: resolvConf{Nameservers: []string{dns}, Searches: clusterSearches, Options: []string{"ndots:5"}}},
		{name: "ClusterFirst", pod: pod(corev1.DNSClusterFirst, false, nil), clusterDNS: dns,
			want: resolvConf{Nameservers: []string{dns}, Searches: clusterSearches, Options: []string{"ndots:5"}}},
		{name: "ClusterFirst on the host network falls back to Default: no name server", pod: pod(corev1.DNSClusterFirst, true, nil), clusterDNS: dns,
			want: resolvConf{}},
		{name: "ClusterFirstWithHostNet", pod: pod(corev1.DNSClusterFirstWithHostNet, true, nil), clusterDNS: dns,
			want: resolvConf{Nameservers: []string{dns}, Searches: clusterSearches, Options: []string{"ndots:5"}}},
		{name: "Default", pod: pod(corev1.DNSDefault, false, nil), clusterDNS: dns, want: resolvConf{}},
		{name: "no cluster DNS", pod: pod(corev1.DNSClusterFirst, false, nil), want: resolvConf{}},
		{name: "None takes dnsConfig only", clusterDNS: dns,
			pod: pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"10.244.0.100"}, Searches: []string{"example.test"},
				Options: []corev1.PodDNSConfigOption{{Name: "edns0"}}}),
			want: resolvConf{Nameservers: []string{"10.244.0.100"}, Searches: []string{"example.test"}, Options: []string{"edns0"}}},
		{name: "dnsConfig adds to the cluster's and replaces an option by name", clusterDNS: dns,
			pod: pod(corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{Nameservers: []string{dns, "10.244.0.100"}, Searches: []string{"cluster.local", "a.test"},
				Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "timeout", Value: ptr.To("1")}}}),
			want: resolvConf{Nameservers: []string{dns, "10.244.0.100"}, Searches: append(clusterSearches, "a.test"), Options: []string{"ndots:2", "timeout:1"}}},
		{name: "too many name servers", clusterDNS: dns,
			pod:     pod(corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}}),
			wantErr: "spec.dnsConfig.nameservers: 4 name servers with the cluster's, at most 3 are read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := podResolvConf(tt.pod, tt.clusterDNS)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff(tt.want, got, gocmp.Transformer("nilIsEmpty", func(s []string) []string {
				if s == nil {
					return []string{}
				}
				return s
			})); diff != "" {
				t.Errorf("resolv.conf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolvConfContent(t *testing.T) {
	got := string(resolvConf{Nameservers: []string{"10.96.0.10"}, Searches: []string{"a.svc.cluster.local", "cluster.local"}, Options: []string{"ndots:5"}}.content())
	want := "nameserver 10.96.0.10\nsearch a.svc.cluster.local cluster.local\noptions ndots:5\n"
	if !strings.HasSuffix(got, want) || !strings.HasPrefix(got, "#") {
		t.Errorf("content:\n%s\nwant a comment line then:\n%s", got, want)
	}
}
