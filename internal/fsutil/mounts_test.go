package fsutil

import "testing"

func TestUnescapeMountPoint(t *testing.T) {
	for in, want := range map[string]string{
		`/a/b`:          "/a/b",
		`/a\040b`:       "/a b",
		`/tab\011x\134`: "/tab\tx\\",
		`/odd\04`:       `/odd\04`,
	} {
		if got := unescapeMountPoint(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
