package main

import (
	"slices"
	"testing"
)

func TestViolations(t *testing.T) {
	banned := []string{module + "internal/operator/controller"}
	deps := []string{
		"fmt",
		module + "internal/operator/controller",
		module + "internal/operator/controller/sub",
		module + "internal/operator/controllerx", // another package that shares the prefix's letters
		module + "internal/operator/podcontract",
	}
	got := violations(deps, banned)
	want := []string{module + "internal/operator/controller", module + "internal/operator/controller/sub"}
	if !slices.Equal(got, want) {
		t.Errorf("violations = %v, want %v", got, want)
	}
}
