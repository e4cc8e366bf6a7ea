package datasplit

import (
	"fmt"
	"io"
)

var newline = []byte{'\n'}

// PartStats counts what one part received.
type PartStats struct {
	Lines int64
	Bytes int64
}

// split deals the lines of sources to parts writers and counts them. Every
// line written ends with a newline, so that an input without a final one
// does not run into the next input's first line.
func split(sources []Source, mode Mode, maxLine int, parts []io.Writer) ([]PartStats, error) {
	n := len(parts)
	var assign assigner = roundRobin(n)
	var total int64 = -1
	if mode == Contiguous {
		var err error
		if total, err = countLines(sources, maxLine); err != nil {
			return nil, err
		}
		assign = &contiguous{starts: contiguousStarts(total, n)}
	}
	stats := make([]PartStats, n)
	var line int64
	err := eachLine(sources, maxLine, func(b []byte) error {
		if total >= 0 && line >= total {
			return fmt.Errorf("the inputs grew between counting (%d lines) and splitting", total)
		}
		p := assign.part(line)
		line++
		if _, err := parts[p].Write(b); err != nil {
			return fmt.Errorf("writing part %d: %w", p, err)
		}
		written := int64(len(b))
		if b[len(b)-1] != '\n' {
			if _, err := parts[p].Write(newline); err != nil {
				return fmt.Errorf("writing part %d: %w", p, err)
			}
			written++
		}
		stats[p].Lines++
		stats[p].Bytes += written
		return nil
	})
	if err != nil {
		return nil, err
	}
	if total >= 0 && line != total {
		return nil, fmt.Errorf("the inputs shrank between counting (%d lines) and splitting (%d)", total, line)
	}
	return stats, nil
}

// countLines is the first pass of contiguous splitting.
func countLines(sources []Source, maxLine int) (int64, error) {
	var total int64
	err := eachLine(sources, maxLine, func([]byte) error {
		total++
		return nil
	})
	return total, err
}
