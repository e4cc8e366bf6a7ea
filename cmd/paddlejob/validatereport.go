package main

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// check is a kind of check validate makes; its problems are listed in
// this order.
type check int

const (
	checkSchema check = iota
	checkWebhook
	checkImage
	// checkServer is a refusal by the API server of a kind no offline
	// check makes (an existing job of the name, a quota).
	checkServer
)

// checkNames say where a problem was found, in a job's count of them.
var checkNames = [...]string{checkSchema: "by the schema", checkWebhook: "by the operator's webhook", checkImage: "in image references", checkServer: "by the API server"}

// problem is one thing wrong with a job.
type problem struct {
	check check
	// field is its path as the API server writes it; "" for a refusal
	// that names no field (an existing job of the name, a quota).
	field, text string
}

// jobReport is what validate found in one job.
type jobReport struct {
	// name is the job's, or #N for the Nth PaddleJob of an unnamed one.
	name     string
	problems []problem
	// notes say what could not be checked, and why.
	notes    []string
	warnings []string
}

// jobName names the nth PaddleJob of a manifest in validate's lines.
func jobName(o *unstructured.Unstructured, n int) string {
	if o.GetName() != "" {
		return o.GetName()
	}
	return fmt.Sprintf("#%d", n)
}

// label starts each of the job's lines: paddlejob/NAME, as kubectl
// names objects, or paddlejob #N.
func (r *jobReport) label() string {
	if strings.HasPrefix(r.name, "#") {
		return "paddlejob " + r.name
	}
	return "paddlejob/" + r.name
}

func (r *jobReport) add(c check, path, text string) {
	// The API server's error that it skipped the CRD's rules says what was
	// not checked: it is no problem of its own.
	if path == "<nil>" && strings.Contains(text, rulesSkipped) {
		r.notes = append(r.notes, rulesSkipped)
		return
	}
	r.problems = append(r.problems, problem{check: c, field: path, text: text})
}

func (r *jobReport) addErrors(c check, errs field.ErrorList) {
	for _, e := range errs {
		r.add(c, e.Field, e.ErrorBody())
	}
}

// rulesSkipped is how the API server says that it did not evaluate the
// CRD's rules (x-kubernetes-validations) of an object the schema refuses.
const rulesSkipped = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"

// unknownField finds the fields of a strict decoding error.
var unknownField = regexp.MustCompile(`unknown field "((?:[^"\\]|\\.)*)"`)

// addRefusal lists the problems an API error refuses the job for: its
// causes, each with its field, as apierrors.NewInvalid makes them (the
// API server's and the webhook's), or the unknown fields of a strict
// decoding error. An error that is no refusal of the job is returned.
func (r *jobReport) addRefusal(c check, err error) error {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &status):
		return err
	}
	s := status.Status()
	if s.Details != nil && len(s.Details.Causes) > 0 {
		for _, cause := range s.Details.Causes {
			r.add(c, cause.Field, cause.Message)
		}
		return nil
	}
	if strings.Contains(s.Message, "strict decoding error") {
		for _, m := range unknownField.FindAllStringSubmatch(s.Message, -1) {
			r.add(c, m[1], m[0])
		}
		return nil
	}
	r.add(c, "", s.Message)
	return nil
}

// serverReport is the report of a server-side dry run's error: the API
// server stops at the first kind of check that fails, the schema's, the
// webhook's or its own, and checks no image reference.
func serverReport(err error) (*jobReport, error) {
	r := &jobReport{}
	c := checkServer
	switch {
	case err == nil:
	case strings.Contains(err.Error(), "admission webhook"):
		c = checkWebhook
	case apierrors.IsInvalid(err), strings.Contains(err.Error(), "strict decoding error"):
		c = checkSchema
	}
	return r, r.addRefusal(c, err)
}

// print writes the job's problems to out, one a line, in an order of their
// own (kind, field path, text), and its warnings and notes to errOut. It
// reports whether the job is valid.
func (r *jobReport) print(out, errOut io.Writer, file string) bool {
	for _, w := range r.warnings {
		fmt.Fprintf(errOut, "Warning: %s\n", w)
	}
	for _, n := range r.notes {
		fmt.Fprintf(errOut, "Note: %s: %s\n", r.label(), n)
	}
	if len(r.problems) == 0 {
		return true
	}
	sort.SliceStable(r.problems, func(i, j int) bool {
		a, b := r.problems[i], r.problems[j]
		switch {
		case a.check != b.check:
			return a.check < b.check
		case a.field != b.field:
			return fieldLess(a.field, b.field)
		}
		return a.text < b.text
	})
	fmt.Fprintf(out, "%s: PaddleJob %s is invalid: %s\n", file, r.name, r.count())
	for _, p := range r.problems {
		if p.field == "" {
			fmt.Fprintf(out, "%s: %s\n", r.label(), p.text)
			continue
		}
		fmt.Fprintf(out, "%s: %s: %s\n", r.label(), p.field, p.text)
	}
	return false
}

// count says how many problems each kind of check found.
func (r *jobReport) count() string {
	var n [len(checkNames)]int
	for _, p := range r.problems {
		n[p.check]++
	}
	var by []string
	for c, name := range checkNames {
		if n[c] > 0 {
			by = append(by, fmt.Sprintf("%d %s", n[c], name))
		}
	}
	s := "s"
	if len(r.problems) == 1 {
		s = ""
	}
	return fmt.Sprintf("%d problem%s (%s)", len(r.problems), s, strings.Join(by, ", "))
}

// fieldLess orders field paths by their text, except that indexes go by
// number: containers[2] before containers[10].
func fieldLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := leadingDigits(a), leadingDigits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func leadingDigits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
