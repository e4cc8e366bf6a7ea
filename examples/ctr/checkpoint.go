package ctr

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A checkpoint is a directory pass-NNNNN (the 0-based pass it ends) holding
//
//	meta.json    format, pass, model config, seed and the pass's metrics
//	params.bin   the flat parameter vector, little-endian float64
//	adagrad.bin  the Adagrad accumulators, same layout
//	done         empty, written last: the checkpoint is complete
const (
	checkpointFormat = "paddlejob-examples/ctr/v1"
	metaFile         = "meta.json"
	paramsFile       = "params.bin"
	accumFile        = "adagrad.bin"
	doneFile         = "done"
	passDirPrefix    = "pass-"
)

// Checkpoint is a saved state and what it was trained with.
type Checkpoint struct {
	Format  string  `json:"format"`
	Pass    int     `json:"pass"`
	Config  Config  `json:"config"`
	Seed    uint64  `json:"seed"`
	Loss    float64 `json:"train_loss"`
	TestAUC float64 `json:"test_auc"`
	State   *State  `json:"-"`
}

// PassDir is the checkpoint directory of a pass under dir.
func PassDir(dir string, pass int) string {
	return filepath.Join(dir, fmt.Sprintf("%s%05d", passDirPrefix, pass))
}

// SaveCheckpoint writes ck as PassDir(dir, ck.Pass), replacing any older
// checkpoint of that pass, and returns its absolute path.
func SaveCheckpoint(dir string, ck *Checkpoint) (string, error) {
	passDir, err := filepath.Abs(PassDir(dir, ck.Pass))
	if err != nil {
		return "", err
	}
	if err := os.RemoveAll(passDir); err != nil {
		return "", fmt.Errorf("clear checkpoint %s: %w", passDir, err)
	}
	if err := os.MkdirAll(passDir, 0o755); err != nil {
		return "", fmt.Errorf("create checkpoint: %w", err)
	}
	meta := *ck
	meta.Format = checkpointFormat
	meta.Config = ck.State.Config
	metaJSON, err := json.MarshalIndent(nanToZero(meta), "", "  ")
	if err != nil {
		return "", err
	}
	files := []struct {
		name string
		data []byte
	}{
		{metaFile, append(metaJSON, '\n')},
		{paramsFile, encodeFloats(ck.State.Params)},
		{accumFile, encodeFloats(ck.State.Accum)},
		{doneFile, nil},
	}
	for _, f := range files {
		if err := writeFileSync(filepath.Join(passDir, f.name), f.data); err != nil {
			return "", fmt.Errorf("write checkpoint: %w", err)
		}
	}
	return passDir, nil
}

// nanToZero keeps metrics JSON-encodable: JSON has no NaN.
func nanToZero(ck Checkpoint) Checkpoint {
	if math.IsNaN(ck.Loss) {
		ck.Loss = 0
	}
	if math.IsNaN(ck.TestAUC) {
		ck.TestAUC = 0
	}
	return ck
}

// LatestCheckpoint is the complete checkpoint (one with done) of the highest
// pass under dir, or "" when there is none.
func LatestCheckpoint(dir string) (string, error) {
	return LatestCheckpointBefore(dir, math.MaxInt)
}

// LatestCheckpointBefore is the complete checkpoint of the highest pass below
// before under dir, or "" when there is none. Passes from before on may be
// left over from an older run in the same directory.
func LatestCheckpointBefore(dir string, before int) (string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look for checkpoints: %w", err)
	}
	var passes []int
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), passDirPrefix)
		pass, err := strconv.Atoi(n)
		if !ok || err != nil || !e.IsDir() || pass < 0 || pass >= before {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), doneFile)); err == nil {
			passes = append(passes, pass)
		}
	}
	if len(passes) == 0 {
		return "", nil
	}
	sort.Ints(passes)
	return PassDir(dir, passes[len(passes)-1]), nil
}

// CompletedAt is when the checkpoint in passDir was completed, and false if
// it is not complete.
func CompletedAt(passDir string) (time.Time, bool) {
	info, err := os.Stat(filepath.Join(passDir, doneFile))
	if err != nil {
		return time.Time{}, false
	}
	return info.ModTime(), true
}

// LoadCheckpoint reads the checkpoint in passDir.
func LoadCheckpoint(passDir string) (*Checkpoint, error) {
	if _, err := os.Stat(filepath.Join(passDir, doneFile)); err != nil {
		return nil, fmt.Errorf("checkpoint %s is incomplete: %w", passDir, err)
	}
	metaJSON, err := os.ReadFile(filepath.Join(passDir, metaFile))
	if err != nil {
		return nil, err
	}
	var ck Checkpoint
	if err := json.Unmarshal(metaJSON, &ck); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %s: %w", passDir, metaFile, err)
	}
	if ck.Format != checkpointFormat {
		return nil, fmt.Errorf("checkpoint %s has format %q, want %q", passDir, ck.Format, checkpointFormat)
	}
	if err := ck.Config.Validate(); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", passDir, err)
	}
	ck.State = &State{Config: ck.Config}
	for _, f := range []struct {
		name string
		dst  *[]float64
	}{{paramsFile, &ck.State.Params}, {accumFile, &ck.State.Accum}} {
		data, err := os.ReadFile(filepath.Join(passDir, f.name))
		if err != nil {
			return nil, err
		}
		if want := 8 * ck.Config.Size(); len(data) != want {
			return nil, fmt.Errorf("checkpoint %s: %s has %d bytes, want %d", passDir, f.name, len(data), want)
		}
		*f.dst = decodeFloats(data)
	}
	return &ck, nil
}

func encodeFloats(xs []float64) []byte {
	out := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(x))
	}
	return out
}

func decodeFloats(data []byte) []float64 {
	out := make([]float64, len(data)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
	}
	return out
}

// writeFileSync writes a file and flushes it to disk, so that done, written
// last, never survives a crash that lost the files before it.
func writeFileSync(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
