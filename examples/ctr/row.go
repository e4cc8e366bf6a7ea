package ctr

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Shape of every row.
const (
	NumSparse = 10 // categorical fields
	NumDense  = 5  // real-valued features
)

// Row is one impression: whether it was clicked, its dense features and the
// category id of each sparse field.
type Row struct {
	Clicked bool
	Dense   [NumDense]float64
	Sparse  [NumSparse]uint32
}

// The text format is one row per line, tab separated:
//
//	label  dense_1 .. dense_5  sparse_1 .. sparse_10
//
// label is 0 or 1, dense features are decimals, sparse ids are unsigned
// integers.
const fieldsPerLine = 1 + NumDense + NumSparse

// FormatRow renders r as one line of the text format, without the newline.
func FormatRow(r *Row) string {
	var b strings.Builder
	if r.Clicked {
		b.WriteByte('1')
	} else {
		b.WriteByte('0')
	}
	for _, x := range r.Dense {
		b.WriteByte('\t')
		b.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
	}
	for _, id := range r.Sparse {
		b.WriteByte('\t')
		b.WriteString(strconv.FormatUint(uint64(id), 10))
	}
	return b.String()
}

// ParseRow parses one line of the text format.
func ParseRow(line string) (Row, error) {
	var r Row
	fields := strings.Split(strings.TrimRight(line, "\r"), "\t")
	if len(fields) != fieldsPerLine {
		return r, fmt.Errorf("want %d tab-separated fields, got %d", fieldsPerLine, len(fields))
	}
	switch fields[0] {
	case "0":
	case "1":
		r.Clicked = true
	default:
		return r, fmt.Errorf("label %q is neither 0 nor 1", fields[0])
	}
	for i := range r.Dense {
		x, err := strconv.ParseFloat(fields[1+i], 64)
		if err != nil {
			return r, fmt.Errorf("dense feature %d: %w", i+1, err)
		}
		r.Dense[i] = x
	}
	for i := range r.Sparse {
		id, err := strconv.ParseUint(fields[1+NumDense+i], 10, 32)
		if err != nil {
			return r, fmt.Errorf("sparse field %d: %w", i+1, err)
		}
		r.Sparse[i] = uint32(id)
	}
	return r, nil
}

// WriteRows writes rows in the text format.
func WriteRows(w io.Writer, rows []Row) error {
	bw := bufio.NewWriter(w)
	for i := range rows {
		if _, err := bw.WriteString(FormatRow(&rows[i])); err != nil {
			return err
		}
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadRows reads rows in the text format, skipping blank lines.
func ReadRows(r io.Reader) ([]Row, error) {
	var rows []Row
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		row, err := ParseRow(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return rows, nil
}

// Shard is the part of rows trainer id of trainers reads: every row whose
// index modulo trainers is id.
func Shard(rows []Row, trainers, id int) []Row {
	if trainers <= 1 {
		return rows
	}
	out := make([]Row, 0, len(rows)/trainers+1)
	for i := id; i < len(rows); i += trainers {
		out = append(out, rows[i])
	}
	return out
}
