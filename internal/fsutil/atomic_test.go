package fsutil

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// contents are two versions of a file, large enough (1 MiB) that a write
// takes many system calls, each byte telling which version it is.
var contents = [2][]byte{bytes.Repeat([]byte{'a'}, 1<<20), bytes.Repeat([]byte{'b'}, 1<<20)}

// checkWhole fails unless the file at path holds one version, whole.
func checkWhole(t *testing.T, path string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, contents[0]) && !bytes.Equal(got, contents[1]) {
		t.Fatalf("%s holds %d bytes, neither version whole (first %q, last %q)", path, len(got), got[:min(len(got), 1)], got[max(len(got)-1, 0):])
	}
}

// Two writers of one path (as two commands writing a cluster's state) and
// a reader: every read finds one version whole, and the writers leave no
// temporary file.
func TestWriteFileAtomicConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	if err := WriteFileAtomic(path, contents[0], 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if err := WriteFileAtomic(path, contents[w], 0o600); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		checkWhole(t, path)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want the file alone", len(entries))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the file's mode: %v, %v; want 0600", fi.Mode(), err)
	}
}

// A writer killed (SIGKILL) at many points of its writes: the file it was
// replacing holds one version, whole, every time.
func TestWriteFileAtomicKilledWriter(t *testing.T) {
	if path := os.Getenv("FSUTIL_TEST_WRITER"); path != "" {
		writeForever(path)
		return
	}
	path := filepath.Join(t.TempDir(), "state")
	if err := WriteFileAtomic(path, contents[0], 0o644); err != nil {
		t.Fatal(err)
	}
	for kill := range 20 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFileAtomicKilledWriter$")
		cmd.Env = append(os.Environ(), "FSUTIL_TEST_WRITER="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The writer says each write it finished; it is killed while
		// it makes the next, after a number of writes that differs
		// from one round to the next.
		lines := bufio.NewScanner(out)
		for range kill + 1 {
			if !lines.Scan() {
				t.Fatalf("the writer stopped: %v", cmd.Wait())
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		checkWhole(t, path)
	}
}

// writeForever writes the versions in turn, saying each it finished.
func writeForever(path string) {
	for i := 0; ; i++ {
		if err := WriteFileAtomic(path, contents[i%2], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("wrote", i)
	}
}
