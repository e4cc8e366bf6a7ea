package main

import "testing"

func TestFakeKubeletWanted(t *testing.T) {
	for _, c := range []struct {
		v        string
		existing bool
		want     bool
		err      bool
	}{
		{"auto", false, true, false},
		{"auto", true, false, true},
		{"true", true, true, false},
		{"false", false, false, false},
		{"yes", false, false, true},
	} {
		got, err := fakeKubeletWanted(c.v, c.existing)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("fakeKubeletWanted(%q, %v) = %v, %v", c.v, c.existing, got, err)
		}
	}
}
