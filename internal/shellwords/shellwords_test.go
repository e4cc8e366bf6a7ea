package shellwords

import (
	"reflect"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "python train.py", want: []string{"python", "train.py"}},
		{in: "  paddle   pserver\t--port=7164 ", want: []string{"paddle", "pserver", "--port=7164"}},
		{in: `sh -c 'echo "$HOME"; exit 3'`, want: []string{"sh", "-c", `echo "$HOME"; exit 3`}},
		{in: `a "b c" d`, want: []string{"a", "b c", "d"}},
		{in: `"say \"hi\"" x\ y`, want: []string{`say "hi"`, "x y"}},
		{in: `"keep \n"`, want: []string{`keep \n`}},
		{in: `a''b ""`, want: []string{"ab", ""}},
		{in: "", want: nil},
		{in: `'open`, wantErr: true},
		{in: `"open`, wantErr: true},
		{in: `trailing\`, wantErr: true},
	}
	for _, tc := range tests {
		got, err := Split(tc.in)
		if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Split(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
