package node

import "testing"

// The compiled filter is what bwrap reads: sock_filter entries of 8 bytes;
// the file a sandbox gets holds it (on the architectures the node filters).
func TestSeccompFile(t *testing.T) {
	f, err := seccompFile()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, 1<<16)
	n, _ := f.Read(data)
	want, _ := compiledSeccomp()
	if n == 0 || n%8 != 0 || string(data[:n]) != string(want) {
		t.Errorf("the file holds %d bytes, want the %d of the program", n, len(want))
	}
}
