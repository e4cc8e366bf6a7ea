package paddleruntime

// pip's installation report (`pip install --report FILE`, with or without
// --dry-run, pip 22.2 and later): what pip resolves, as JSON, instead of
// its messages, which change between pip releases.

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
)

// minReportPip is the first pip with `install --dry-run --report`.
const minReportPip = "22.2"

// pipReportName is the report of the install, checked to hold the pins and
// kept in the runtime: which file each pin came from.
const pipReportName = "paddlejob-pip-report.json"

// pipReport is the part of pip's installation report this package reads.
type pipReport struct {
	// Version is the report's format: "0" from pip 22.2 (experimental),
	// "1" from 23.0 (stable, same fields). pip changes it only for an
	// incompatible change.
	Version    string          `json:"version"`
	PipVersion string          `json:"pip_version"`
	Install    []pipReportItem `json:"install"`
	// Environment is the interpreter's marker values: python_full_version,
	// implementation_name, sys_platform, platform_machine...
	Environment map[string]string `json:"environment"`
}

// pipReportItem is a distribution pip installs (or would, in a dry run).
type pipReportItem struct {
	DownloadInfo struct {
		URL         string `json:"url"`
		ArchiveInfo struct {
			Hashes map[string]string `json:"hashes"`
		} `json:"archive_info"`
	} `json:"download_info"`
	Metadata struct {
		Name           string `json:"name"`
		Version        string `json:"version"`
		RequiresPython string `json:"requires_python"`
	} `json:"metadata"`
}

// file is the name of the file pip would install the item from.
func (it pipReportItem) file() string { return path.Base(it.DownloadInfo.URL) }

// sha256 is the file's sha256, "" when pip does not know it.
func (it pipReportItem) sha256() string { return it.DownloadInfo.ArchiveInfo.Hashes["sha256"] }

// readPipReport reads a report pip wrote.
func readPipReport(file string) (*pipReport, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("pip's report: %w", err)
	}
	return parsePipReport(b)
}

func parsePipReport(b []byte) (*pipReport, error) {
	var r pipReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("pip's report is not JSON: %w", err)
	}
	if r.Version != "0" && r.Version != "1" {
		return nil, fmt.Errorf("pip %s writes its report in format %q; paddlejob reads formats 0 and 1", r.PipVersion, r.Version)
	}
	return &r, nil
}

// item is what the report says pip would install for the requirement r,
// or nil.
func (r *pipReport) item(req pin) *pipReportItem {
	for i := range r.Install {
		it := &r.Install[i]
		if canonicalName(it.Metadata.Name) == canonicalName(req.name) {
			return it
		}
	}
	return nil
}

// checkResolves says which pins the report does not resolve at their
// version; nil when it resolves them all.
func (r *pipReport) checkResolves(p pinSet) error {
	var missing []string
	for _, req := range p.reqs {
		it := r.item(req)
		switch {
		case it == nil:
			missing = append(missing, req.spec()+" (not in it)")
		case it.Metadata.Version != req.version:
			missing = append(missing, fmt.Sprintf("%s (it has %s)", req.spec(), it.Metadata.Version))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("pip's resolve does not hold %s", strings.Join(missing, ", "))
	}
	return nil
}

// environment describes the interpreter pip resolved for, from the report.
func (r *pipReport) environment() string {
	e := r.Environment
	return fmt.Sprintf("Python %s (%s) on %s %s", e["python_full_version"], e["implementation_name"], e["sys_platform"], e["platform_machine"])
}

var nameSeparators = regexp.MustCompile(`[-_.]+`)

// canonicalName is a distribution's name as indexes compare them (PEP 503).
func canonicalName(name string) string {
	return strings.ToLower(nameSeparators.ReplaceAllString(name, "-"))
}
