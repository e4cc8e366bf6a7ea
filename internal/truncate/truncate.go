// Package truncate cuts text to a limit an API sets (an event's note, a
// condition's message, a line of an error), saying how much it cut.
package truncate

import (
	"fmt"
	"unicode/utf8"
)

// String cuts s to at most n bytes, on a UTF-8 boundary, ending it with how
// many bytes it cut: " ... (N more bytes cut)". The result is never longer
// than n unless n is shorter than that suffix, and is valid UTF-8 when s is:
// an API server refuses a longer note and JSON mangles a split character.
// s is returned unchanged when it fits.
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// The suffix's digits never exceed those of len(s).
	keep := max(n-len(fmt.Sprintf(" ... (%d more bytes cut)", len(s))), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + fmt.Sprintf(" ... (%d more bytes cut)", len(s)-keep)
}
