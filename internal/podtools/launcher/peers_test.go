package launcher

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pod is a job pod in phase with ip ("" for none).
func pod(name string, phase corev1.PodPhase, ip string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"job-name": "paddle-cluster-job"}},
		Status:     corev1.PodStatus{Phase: phase, PodIP: ip},
	}
}

func terminating(p corev1.Pod) corev1.Pod {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

func names(pods []corev1.Pod) []string {
	var s []string
	for _, p := range pods {
		s = append(s, p.Name)
	}
	return s
}

func TestObservePeers(t *testing.T) {
	tests := []struct {
		name         string
		pods         []corev1.Pod
		expected     int
		wantComplete bool
		wantReady    []string
		wantMessage  string
	}{
		{
			name:         "all running",
			pods:         []corev1.Pod{pod("c", corev1.PodRunning, "10.0.0.3"), pod("a", corev1.PodRunning, "10.0.0.1"), pod("b", corev1.PodRunning, "10.0.0.2")},
			expected:     3,
			wantComplete: true,
			wantReady:    []string{"a", "b", "c"},
			wantMessage:  "3 of 3 pods are running with an IP",
		},
		{
			name:        "one pending, one not created",
			pods:        []corev1.Pod{pod("job-a", corev1.PodRunning, "10.0.0.1"), pod("job-x7k2p", corev1.PodPending, "")},
			expected:    3,
			wantReady:   []string{"job-a"},
			wantMessage: "1 of 3 pods are running with an IP; waiting for: job-x7k2p (Pending), 1 pod not created yet",
		},
		{
			name:        "running without an IP, no status, two not created",
			pods:        []corev1.Pod{pod("b", corev1.PodRunning, ""), pod("a", "", "")},
			expected:    4,
			wantMessage: "0 of 4 pods are running with an IP; waiting for: a (no status yet), b (Running, no IP), 2 pods not created yet",
		},
		{
			name: "finished and terminating predecessors are ignored",
			pods: []corev1.Pod{
				pod("a", corev1.PodRunning, "10.0.0.1"),
				pod("b-old", corev1.PodFailed, "10.0.0.2"),
				pod("c-old", corev1.PodSucceeded, "10.0.0.3"),
				terminating(pod("d-old", corev1.PodRunning, "10.0.0.4")),
				pod("b", corev1.PodRunning, "10.0.0.5"),
			},
			expected:     2,
			wantComplete: true,
			wantReady:    []string{"a", "b"},
			wantMessage:  "2 of 2 pods are running with an IP",
		},
		{
			name:        "more active pods than expected",
			pods:        []corev1.Pod{pod("a", corev1.PodRunning, "10.0.0.1"), pod("b", corev1.PodRunning, "10.0.0.2"), pod("c", corev1.PodPending, "")},
			expected:    2,
			wantReady:   []string{"a", "b"},
			wantMessage: "2 of 2 pods are running with an IP; 3 pods are active but parallelism is 2, waiting for the extra ones to finish: a, b, c",
		},
		{
			name:        "nothing yet",
			expected:    1,
			wantMessage: "0 of 1 pods are running with an IP; waiting for: 1 pod not created yet",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := observePeers(tt.pods, tt.expected)
			if got := s.complete(); got != tt.wantComplete {
				t.Errorf("complete() = %v, want %v", got, tt.wantComplete)
			}
			if got := names(s.ready); !reflect.DeepEqual(got, tt.wantReady) {
				t.Errorf("ready = %v, want %v", got, tt.wantReady)
			}
			if got := s.String(); got != tt.wantMessage {
				t.Errorf("String() =\n  %q\nwant\n  %q", got, tt.wantMessage)
			}
		})
	}
}

func TestTrainerOrder(t *testing.T) {
	tests := []struct {
		name    string
		ips     []string
		want    []string
		wantErr string
	}{
		{
			name: "numeric, not lexical",
			ips:  []string{"10.0.0.10", "10.0.0.9", "10.0.0.100", "9.255.255.255"},
			want: []string{"9.255.255.255", "10.0.0.9", "10.0.0.10", "10.0.0.100"},
		},
		{
			name: "the three-node Job's addresses",
			ips:  []string{"192.168.223.143", "192.168.129.71", "192.168.129.66"},
			want: []string{"192.168.129.66", "192.168.129.71", "192.168.223.143"},
		},
		{
			name: "IPv6, and IPv4 before IPv6",
			ips:  []string{"fd00::a", "fd00::9", "fd00::1:0", "10.0.0.1"},
			want: []string{"10.0.0.1", "fd00::9", "fd00::a", "fd00::1:0"},
		},
		{
			name: "IPv4-mapped IPv6 counts as IPv4",
			ips:  []string{"::ffff:10.0.0.10", "10.0.0.9"},
			want: []string{"10.0.0.9", "10.0.0.10"},
		},
		{name: "not an address", ips: []string{"10.0.0.1", "pod-b"}, wantErr: `pod p1 has pod IP "pod-b"`},
		{name: "shared address", ips: []string{"10.0.0.1", "10.0.0.1"}, wantErr: "pods p0 and p1 share pod IP 10.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []corev1.Pod
			for i, ip := range tt.ips {
				pods = append(pods, pod("p"+string(rune('0'+i)), corev1.PodRunning, ip))
			}
			order, err := trainerOrder(pods)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("trainerOrder() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range order {
				got = append(got, a.String())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("trainerOrder() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTrainerID(t *testing.T) {
	order := []netip.Addr{netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("10.0.0.10"), netip.MustParseAddr("10.0.0.11")}
	tests := []struct {
		self    string
		want    int
		wantErr bool
	}{
		{self: "10.0.0.9", want: 0},
		{self: "10.0.0.10", want: 1},
		{self: "::ffff:10.0.0.11", want: 2},
		{self: "10.0.0.12", wantErr: true},
	}
	for _, tt := range tests {
		got, err := trainerID(order, netip.MustParseAddr(tt.self))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("trainerID(%s) = %d, %v; want %d, error %v", tt.self, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestSelfAddress(t *testing.T) {
	peers := []corev1.Pod{pod("job-a", corev1.PodRunning, "10.0.0.9"), pod("job-b", corev1.PodRunning, "10.0.0.10")}
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, a := range s {
			out = append(out, netip.MustParseAddr(a))
		}
		return out
	}
	tests := []struct {
		name       string
		peers      []corev1.Pod // the two 10.0.0.x pods when nil
		hostname   string
		interfaces []netip.Addr
		want       string
		wantErr    string
	}{
		{name: "by hostname", hostname: "job-b", interfaces: addrs("127.0.0.1"), want: "10.0.0.10"},
		{name: "by interface", hostname: "node-1", interfaces: addrs("127.0.0.1", "192.168.1.5", "10.0.0.9"), want: "10.0.0.9"},
		{name: "loopback pod IP of a process node", hostname: "node-1", interfaces: addrs("127.0.0.1", "127.0.0.3"),
			peers: []corev1.Pod{pod("job-a", corev1.PodRunning, "127.0.0.2"), pod("job-b", corev1.PodRunning, "127.0.0.3")},
			want:  "127.0.0.3"},
		{name: "not found", hostname: "node-1", interfaces: addrs("127.0.0.1", "192.168.1.5"),
			wantErr: `no pod is named "node-1", and no local address (127.0.0.1,192.168.1.5) is a pod IP of the job (10.0.0.9,10.0.0.10)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peers := peers
			if tt.peers != nil {
				peers = tt.peers
			}
			got, err := selfAddress(tt.hostname, peers, tt.interfaces)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("selfAddress() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Errorf("selfAddress() = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}
