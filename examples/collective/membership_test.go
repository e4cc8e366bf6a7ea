package collective

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/paddlejob/paddlejob/examples/collective/membershiptest"
)

func TestMembershipDirRead(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	os.MkdirAll(plain, 0o755)
	os.WriteFile(filepath.Join(plain, "PADDLE_TRAINER_ENDPOINTS"), []byte("a:1, b:1\n"), 0o644)
	projected := filepath.Join(dir, "projected")
	for v, eps := range [][]string{{"x:1"}, {"x:1", "y:2"}} {
		if err := membershiptest.Publish(projected, strconv.Itoa(v+1), eps); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		dir     string
		want    Membership
		wantErr error
	}{
		{"plain files, no version", plain, Membership{Endpoints: []string{"a:1", "b:1"}}, nil},
		{"projected, latest publication", projected, Membership{Version: "2", Endpoints: []string{"x:1", "y:2"}}, nil},
		{"missing", filepath.Join(dir, "missing"), Membership{}, os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MembershipDir(tt.dir).Read()
			if !errors.Is(err, tt.wantErr) || !got.Equal(tt.want) {
				t.Fatalf("Read() = %v, %v; want %v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestMembershipReadNeverMixesPublications(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	if err := membershiptest.Publish(dir, "0", []string{"w:0"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for v := 1; v <= 200; v++ {
			if err := membershiptest.Publish(dir, strconv.Itoa(v), []string{"w:" + strconv.Itoa(v)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for reads := 0; ; reads++ {
		select {
		case <-done:
			t.Logf("%d consistent reads", reads)
			return
		default:
		}
		m, err := MembershipDir(dir).Read()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Endpoints) != 1 || m.Endpoints[0] != "w:"+m.Version {
			t.Fatalf("read %v: the version and the list come from different publications", m)
		}
	}
}
