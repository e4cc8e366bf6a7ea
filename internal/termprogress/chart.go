package termprogress

import (
	"fmt"
	"math"
	"strings"
)

// Chart draws a curve of values as a small terminal chart of height rows
// and at most width columns, with the value axis labelled at its top and
// bottom. Values are resampled to the width: each column shows the mean of
// the values that fall into it.
func Chart(values []float64, width, height int) []string {
	if len(values) == 0 || width < 2 || height < 2 {
		return nil
	}
	cols := min(width, len(values))
	sampled := make([]float64, cols)
	for c := range cols {
		lo, hi := c*len(values)/cols, (c+1)*len(values)/cols
		sum := 0.0
		for _, v := range values[lo:hi] {
			sum += v
		}
		sampled[c] = sum / float64(hi-lo)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range sampled {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	span := hi - lo
	row := func(v float64) int { // 0 at the bottom
		if span == 0 {
			return height / 2
		}
		return int(math.Round((v - lo) / span * float64(height-1)))
	}
	grid := make([][]rune, height)
	for r := range grid {
		grid[r] = []rune(strings.Repeat(" ", cols))
	}
	for c, v := range sampled {
		grid[height-1-row(v)][c] = '*'
	}
	top, bottom := fmt.Sprintf("%.4g", hi), fmt.Sprintf("%.4g", lo)
	label := max(len(top), len(bottom))
	out := make([]string, 0, height+1)
	for r := range grid {
		l := ""
		switch r {
		case 0:
			l = top
		case height - 1:
			l = bottom
		}
		out = append(out, fmt.Sprintf("%*s |%s", label, l, strings.TrimRight(string(grid[r]), " ")))
	}
	out = append(out, fmt.Sprintf("%*s +%s", label, "", strings.Repeat("-", cols)))
	return out
}
