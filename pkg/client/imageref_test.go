package client

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// ValidateImage on the shared vectors (test/vectors/imageref).
func TestValidateImage(t *testing.T) {
	data, err := os.ReadFile("../../test/vectors/imageref/references.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors struct {
		Cases []struct{ Ref, Says string }
	}
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	for _, tc := range vectors.Cases {
		err := ValidateImage(tc.Ref)
		if (tc.Says == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.Says) {
			t.Errorf("%q: error %v, want one saying %q", tc.Ref, err, tc.Says)
		}
	}
}
