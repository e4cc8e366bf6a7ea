// Package shellwords splits a command line into arguments the way a POSIX
// shell would for plain words and quotes, without running a shell: no
// variables, globs or operators.
package shellwords
