// Command importrules keeps the operator's layers apart: the pod contract
// (internal/operator/podcontract) and the checks of a job
// (internal/operator/validation) depend on none of the controller, the
// webhook and the progress endpoint, so that the webhook and `paddlejob
// validate` check a job without the controller, and `paddlejob validate`
// itself imports no controller. A package's rule holds for everything it
// links (go list -deps), a file's for the file's own imports. `make lint`
// runs it.
//
//	go run ./hack/importrules [repository root]
package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

const module = "github.com/paddlejob/paddlejob/"

// rule bans the packages under the banned prefixes from what pkg links, or
// from what file imports.
type rule struct {
	pkg, file string
	banned    []string
	why       string
}

var operatorSide = []string{module + "internal/operator/controller", module + "internal/operator/webhook", module + "internal/operator/progress"}

var rules = []rule{
	{pkg: "./internal/operator/podcontract", banned: append([]string{module + "internal/operator/validation"}, operatorSide...),
		why: "the pod contract is pure: the controller and validation build on it, not it on them"},
	{pkg: "./internal/operator/validation", banned: operatorSide,
		why: "the checks of a job run in the webhook and in `paddlejob validate` without the controller"},
	{file: "cmd/paddlejob/validate.go", banned: []string{module + "internal/operator/controller", module + "internal/operator/progress"},
		why: "offline validation takes the operator's settings as validation.Settings, not the controller's Options"},
}

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	var failed bool
	for _, r := range rules {
		deps, err := imports(root, r)
		if err != nil {
			fmt.Fprintln(os.Stderr, "importrules:", err)
			os.Exit(2)
		}
		for _, v := range violations(deps, r.banned) {
			failed = true
			fmt.Printf("%s%s depends on %s: %s\n", r.pkg, r.file, v, r.why)
		}
	}
	if failed {
		os.Exit(1)
	}
}

// imports are the packages a rule's package links, or its file imports.
func imports(root string, r rule) ([]string, error) {
	if r.file != "" {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, r.file), nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
		return out, nil
	}
	cmd := exec.Command("go", "list", "-deps", r.pkg)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %w", r.pkg, err)
	}
	return strings.Fields(string(out)), nil
}

// violations are the packages of deps that a banned prefix names: the
// package itself or one below it.
func violations(deps, banned []string) []string {
	var out []string
	for _, d := range deps {
		for _, b := range banned {
			if d == b || strings.HasPrefix(d, b+"/") {
				out = append(out, d)
				break
			}
		}
	}
	return out
}
