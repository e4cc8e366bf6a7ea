// Package termprogress renders a job's progress for a terminal or a log: a
// header and a line per role, redrawn in place on a terminal, a line per
// change otherwise.
package termprogress
