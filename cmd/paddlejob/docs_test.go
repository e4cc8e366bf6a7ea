package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/paddlejob/paddlejob/internal/markdown"
	"github.com/paddlejob/paddlejob/internal/testutil/testenv"
)

// commandLine is a paddlejob command in code: at the start of the code or
// after a shell separator, as the CLI or as the kubectl plugin.
var commandLine = regexp.MustCompile(`(?:^|[;&|(]\s*|\$\(\s*)(?:kubectl\s+)?paddlejob((?:\s+[^\s;&|)#]+)+)`)

// Every paddlejob command line the docs show names commands and flags the
// CLI has: a renamed command or flag fails here, not in a user's shell.
func TestDocsShowOnlyCommandsAndFlagsThatExist(t *testing.T) {
	files, err := markdown.Files(testenv.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(testenv.RepoRoot(), f)
		markdown.Lines(string(data), func(n int, code []string, _ string) {
			for _, c := range code {
				for _, m := range commandLine.FindAllStringSubmatch(c, -1) {
					lines++
					if p := checkCommandLine(newRootCmd(), strings.Fields(m[1])); p != "" {
						t.Errorf("%s:%d: paddlejob%s: %s", rel, n, m[1], p)
					}
				}
			}
		})
	}
	t.Logf("%d paddlejob command lines in %d files", lines, len(files))
	if lines < 100 {
		t.Fatalf("found %d paddlejob command lines in the docs; the pattern no longer finds them", lines)
	}
}

// checkCommandLine says what in args (the words after paddlejob) the CLI
// does not have, or "": the subcommands, then each flag up to "--".
func checkCommandLine(root *cobra.Command, args []string) string {
	// What cobra adds as the CLI starts: help and completion.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	cmd := root
	i := 0
	for ; i < len(args); i++ {
		next := child(cmd, args[i])
		if next == nil {
			break
		}
		cmd = next
	}
	if cmd == root && i < len(args) && !strings.HasPrefix(args[i], "-") && !placeholder.MatchString(args[i]) {
		return fmt.Sprintf("no command %q", args[i])
	}
	for _, a := range args[i:] {
		if a == "--" {
			break
		}
		if p := checkFlag(cmd, a); p != "" {
			return p
		}
	}
	return ""
}

// placeholder is a word standing for a command in prose: <verb>, ..., VERB.
var placeholder = regexp.MustCompile(`^(<.*>|\.\.\.|…|[A-Z_]+|\[.*\]|\|.*)$`)

func child(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// checkFlag says what is wrong with a word that is a flag of cmd, or "".
func checkFlag(cmd *cobra.Command, word string) string {
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	var f *pflag.Flag
	switch {
	case strings.HasPrefix(word, "--") && len(word) > 2:
		name, _, _ := strings.Cut(word[2:], "=")
		if f = cmd.Flags().Lookup(name); f == nil {
			f = cmd.InheritedFlags().Lookup(name)
		}
	case strings.HasPrefix(word, "-") && len(word) == 2:
		if f = cmd.Flags().ShorthandLookup(word[1:]); f == nil {
			f = cmd.InheritedFlags().ShorthandLookup(word[1:])
		}
	default:
		return ""
	}
	if f == nil {
		return fmt.Sprintf("%s has no flag %s", cmd.CommandPath(), word)
	}
	return ""
}

// docLink is a docs page and heading the CLI's help points to.
var docLink = regexp.MustCompile(`\b((?:docs/[a-z0-9-]+|README)\.md)#([A-Za-z0-9_-]+)`)

// Every docs/PAGE.md#heading the CLI's help names is a heading of that page.
func TestHelpLinksResolve(t *testing.T) {
	links := 0
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		texts := []string{cmd.Short, cmd.Long, cmd.Example}
		cmd.Flags().VisitAll(func(f *pflag.Flag) { texts = append(texts, f.Usage) })
		for _, m := range docLink.FindAllStringSubmatch(strings.Join(texts, "\n"), -1) {
			links++
			data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), m[1]))
			if err != nil {
				t.Errorf("%s: %v", cmd.CommandPath(), err)
				continue
			}
			if !slices.Contains(markdown.Anchors(string(data)), m[2]) {
				t.Errorf("%s's help links %s#%s: the page has no such heading", cmd.CommandPath(), m[1], m[2])
			}
		}
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(newRootCmd())
	if links == 0 {
		t.Fatal("the help names no docs heading; the pattern no longer finds them")
	}
}

func TestCheckCommandLine(t *testing.T) {
	for line, wantProblem := range map[string]bool{
		"up --capacity cpu=2,memory=4Gi":             false,
		"run -f job.yaml --follow=worker-0":          false,
		"get -w":                                     false,
		"launch --no-pserver -- python train.py --x": false,
		"data split --help":                          false,
		"<command> --help":                           false,
		"up --no-such-flag":                          true,
		"get -Z":                                     true,
		"nosuch wd":                                  true,
	} {
		if p := checkCommandLine(newRootCmd(), strings.Fields(line)); (p != "") != wantProblem {
			t.Errorf("paddlejob %s: problem %q, want one: %v", line, p, wantProblem)
		}
	}
}
