package truncate

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		s string
		n int
	}{
		{"short", 10},
		{"exactly ten", 11},
		{strings.Repeat("x", 5000), 1024},
		{strings.Repeat("é", 40000), 32768},
		{"name-" + strings.Repeat("名", 30), 80},
		{strings.Repeat("x", 100), 5}, // shorter than the suffix: the suffix alone
	} {
		got := String(tc.s, tc.n)
		if len(tc.s) <= tc.n {
			if got != tc.s {
				t.Errorf("String changed %q, which fits in %d", tc.s, tc.n)
			}
			continue
		}
		if len(got) > tc.n && tc.n >= 30 {
			t.Errorf("String to %d gave %d bytes", tc.n, len(got))
		}
		if !utf8.ValidString(got) {
			t.Errorf("String cut a character in two: %q", got[max(len(got)-40, 0):])
		}
		kept := strings.Index(got, " ... (")
		if !strings.HasPrefix(tc.s, got[:kept]) {
			t.Errorf("String to %d kept %q, not a prefix of the input", tc.n, got[:kept])
		}
		if want := fmt.Sprintf(" ... (%d more bytes cut)", len(tc.s)-kept); !strings.HasSuffix(got, want) {
			t.Errorf("String to %d ends %q, want %q", tc.n, got[max(len(got)-40, 0):], want)
		}
	}
}
