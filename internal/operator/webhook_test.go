package operator

import (
	"strings"
	"testing"
)

// The webhook's certificate options: a bad mode or an IP for the
// self-issued certificate (which names DNS names only) is refused, saying
// what is allowed; a self-issued certificate comes with a channel the
// rotator closes once it is in place, an external one without.
func TestWebhookCertificateOptions(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*WebhookOptions)
		wantErr   string
		wantReady bool
	}{
		{"self", func(*WebhookOptions) {}, "", true},
		{"self with a name", func(w *WebhookOptions) { w.ExtraHosts = []string{"localhost"} }, "", true},
		{"self with an IP", func(w *WebhookOptions) { w.ExtraHosts = []string{"localhost", "127.0.0.1"} },
			`--webhook-cert-hosts "127.0.0.1": an IP address, but the self-issued certificate names DNS names only: use a name (localhost) or --webhook-certs=external`, false},
		{"external", func(w *WebhookOptions) { w.Certs = CertsExternal; w.ExtraHosts = []string{"127.0.0.1"} }, "", false},
		{"unknown mode", func(w *WebhookOptions) { w.Certs = "cert-manager" }, `--webhook-certs "cert-manager": want self or external`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := DefaultWebhookOptions()
			tc.edit(&w)
			server, ready, err := w.webhookServer()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || server == nil {
				t.Fatalf("server %v, error %v", server, err)
			}
			if (ready != nil) != tc.wantReady {
				t.Errorf("a certificates-ready channel: %v, want %v", ready != nil, tc.wantReady)
			}
		})
	}
	w := DefaultWebhookOptions()
	w.Port = 0
	if server, _, err := w.webhookServer(); server != nil || err != nil {
		t.Errorf("--webhook-port=0: server %v, error %v", server, err)
	}
}
