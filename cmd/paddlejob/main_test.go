package main

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// The fake clients of the unit tests cannot stream a watch's initial
	// list (client-go's WatchListClient, on by default, which a real API
	// server serves): the SDK's informers list, then watch, as they do
	// against an API server without it.
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	os.Exit(m.Run())
}
