package ctr

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestRowTextRoundTrip(t *testing.T) {
	rows := NewSource(7).Rows(TrainSplit, 500)
	var buf bytes.Buffer
	if err := WriteRows(&buf, rows); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != len(rows) {
		t.Fatalf("wrote %d lines for %d rows", lines, len(rows))
	}
	got, err := ReadRows(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatal("rows read back differ from the rows written")
	}
}

func TestParseRow(t *testing.T) {
	valid := "1\t0.5\t-1.25\t0\t2\t3.1416\t0\t1\t2\t3\t4\t5\t6\t7\t8\t9"
	tests := []struct {
		name    string
		line    string
		wantErr string
	}{
		{"valid", valid, ""},
		{"windows line end", valid + "\r", ""},
		{"too few fields", "1\t0.5", "want 16 tab-separated fields, got 2"},
		{"bad label", "2" + valid[1:], `label "2"`},
		{"bad dense", strings.Replace(valid, "-1.25", "x", 1), "dense feature 2"},
		{"negative id", strings.Replace(valid, "\t9", "\t-9", 1), "sparse field 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row, err := ParseRow(tt.line)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseRow error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Row{Clicked: true, Dense: [NumDense]float64{0.5, -1.25, 0, 2, 3.1416}, Sparse: [NumSparse]uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}
			if row != want {
				t.Fatalf("ParseRow = %+v, want %+v", row, want)
			}
		})
	}
}

func TestReadRowsNamesTheBadLine(t *testing.T) {
	_, err := ReadRows(strings.NewReader("\n" + FormatRow(&Row{}) + "\nnonsense\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "line 3:") {
		t.Fatalf("error = %v, want it to name line 3", err)
	}
}

func TestShard(t *testing.T) {
	rows := make([]Row, 10)
	for i := range rows {
		rows[i].Sparse[0] = uint32(i)
	}
	tests := []struct {
		trainers, id int
		want         []uint32
	}{
		{1, 0, []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{2, 0, []uint32{0, 2, 4, 6, 8}},
		{2, 1, []uint32{1, 3, 5, 7, 9}},
		{3, 0, []uint32{0, 3, 6, 9}},
		{3, 2, []uint32{2, 5, 8}},
		{4, 3, []uint32{3, 7}},
		{12, 11, nil},
	}
	for _, tt := range tests {
		var got []uint32
		for _, r := range Shard(rows, tt.trainers, tt.id) {
			got = append(got, r.Sparse[0])
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Shard(10 rows, %d, %d) = %v, want %v", tt.trainers, tt.id, got, tt.want)
		}
	}
}
