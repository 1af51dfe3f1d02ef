package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nrikit/nrikit/conformance/cri/fakecri"
)

// checksRuntimeCRI runs a documented `nri check runtime --cri-socket`
// line against a CRI runtime in memory on nrikit's runtime library that
// has the line's image: every check passes or is skipped, and the JUnit
// file is written.
func checksRuntimeCRI(t *testing.T, e *docEnv, argv []string) {
	image, junit := "", ""
	for i, a := range argv[:len(argv)-1] {
		switch a {
		case "--image":
			image = argv[i+1]
		case "--junit":
			junit = argv[i+1]
		}
	}
	rt := fakecri.Start(t, fakecri.Config{RequestTimeout: 2 * time.Second, Images: []string{image}})
	for i, a := range argv[:len(argv)-1] {
		switch a {
		case "--socket":
			argv[i+1] = rt.NRISocket
		case "--cri-socket":
			argv[i+1] = rt.CRISocket
		}
	}
	p := e.start(t, e.dir, argv)
	p.expect(t, "nri check runtime --cri-socket", 0)
	var report struct {
		Failed  bool              `json:"failed"`
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal([]byte(p.stdout.String()), &report); err != nil || report.Failed || len(report.Results) < 40 {
		t.Errorf("report: %v, failed %v, %d results:\n%s", err, report.Failed, len(report.Results), p.stdout.String())
	}
	if _, err := os.Stat(filepath.Join(e.dir, junit)); err != nil {
		t.Errorf("no JUnit report: %v", err)
	}
}
