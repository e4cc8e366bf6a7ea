package datasplit

import "fmt"

// Mode is how lines are dealt to parts.
type Mode string

const (
	// RoundRobin gives line g (0-based, counted across all inputs in order)
	// to part g mod N. The paddle.job SDK's dist_reader deals the same way but counts
	// from 1, so its trainer t reads what this puts in part (t-1) mod N.
	RoundRobin Mode = "round-robin"
	// Contiguous gives every part one run of consecutive lines; the first
	// total mod N parts get one line more than the others.
	Contiguous Mode = "contiguous"
)

// ParseMode validates a --mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case RoundRobin, Contiguous:
		return m, nil
	}
	return "", fmt.Errorf("--mode=%q: want %q or %q", s, RoundRobin, Contiguous)
}

// contiguousStarts returns, for each of parts parts, the index of its first
// line, and total as a last element, so part i holds lines
// [starts[i], starts[i+1]).
func contiguousStarts(total int64, parts int) []int64 {
	starts := make([]int64, parts+1)
	base, extra := total/int64(parts), total%int64(parts)
	for i := range parts {
		size := base
		if int64(i) < extra {
			size++
		}
		starts[i+1] = starts[i] + size
	}
	return starts
}

// assigner maps a line's global index to its part; indexes come in order.
type assigner interface{ part(line int64) int }

type roundRobin int

func (n roundRobin) part(line int64) int { return int(line % int64(n)) }

// contiguous walks the part boundaries as the lines go by.
type contiguous struct {
	starts  []int64
	current int
}

func (c *contiguous) part(line int64) int {
	for c.current < len(c.starts)-2 && line >= c.starts[c.current+1] {
		c.current++
	}
	return c.current
}
