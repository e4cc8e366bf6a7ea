// Package membershiptest publishes a job's membership into a directory the
// way the kubelet updates a projected volume, for tests of elastic workers
// run outside a cluster.
package membershiptest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Publish makes dir hold the membership files of a collective job with these
// worker endpoints. The files of a publication live in a fresh hidden
// directory; the ..data symlink is swapped to it in one rename and every
// visible file is a symlink through ..data, so a reader sees either the old
// set or the new one, never a mix.
func Publish(dir, version string, endpoints []string) error {
	hosts := make([]string, len(endpoints))
	for i, ep := range endpoints {
		hosts[i] = ep[:max(strings.LastIndex(ep, ":"), 0)]
	}
	master := ""
	if len(endpoints) > 0 {
		master = endpoints[0]
	}
	files := map[string]string{
		"PADDLE_TRAINER_ENDPOINTS": strings.Join(endpoints, ","),
		"PADDLE_TRAINERS":          strings.Join(hosts, ","),
		"PADDLE_TRAINERS_NUM":      strconv.Itoa(len(endpoints)),
		"PADDLE_NNODES":            strconv.Itoa(len(endpoints)),
		"PADDLE_MASTER":            master,
		"version":                  version,
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	payload, err := os.MkdirTemp(dir, "..payload-")
	if err != nil {
		return err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(payload, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	data := filepath.Join(dir, "..data")
	old, _ := os.Readlink(data)
	tmp := data + "-tmp"
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(payload), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, data); err != nil {
		return fmt.Errorf("swap %s: %w", data, err)
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
			return err
		}
	}
	if old != "" {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}
