package yamldoc_test

import (
	"errors"
	"testing"

	"github.com/nrikit/nrikit/internal/yamldoc"
)

type config struct {
	Env    map[string]string `yaml:"env"`
	Limits struct {
		Files uint64 `yaml:"files"`
	} `yaml:"limits"`
	Dirs  []string `yaml:"dirs"`
	Rules []*rule  `yaml:"rules"`
}

type rule struct {
	MaxCPUShares uint64 `yaml:"maxCpuShares"`
	Inline       `yaml:",inline"`
}

// Inline's keys are its parent's.
type Inline struct {
	Path string
}

// TestDecode checks that mistakes name their line and, where yaml.v3
// gives Go types, the document's field instead.
func TestDecode(t *testing.T) {
	for name, tc := range map[string]struct {
		doc, want string
	}{
		"unknown key":                        {"env: {A: b}\nevnts: x\n", `line 2: unknown key "evnts" at the top level`},
		"misspelt key":                       {"env: {A: b}\nevn: x\n", `line 2: unknown key "evn" at the top level (did you mean "env"?)`},
		"misspelt nested key":                {"limits:\n  fles: 3\n", `line 2: unknown key "fles" in limits (did you mean "files"?)`},
		"misspelt key in a list":             {"rules:\n  - {path: /x}\n  - maxcpushare: 3\n", `line 3: unknown key "maxcpushare" in rules[1] (did you mean "maxCpuShares"?)`},
		"misspelt inline key":                {"rules:\n  - {pth: /x}\n", `line 2: unknown key "pth" in rules[0] (did you mean "path"?)`},
		"wrong type":                         {"limits:\n  files: many\n", `line 2: cannot unmarshal a string ("many") into limits.files: want a non-negative integer`},
		"mapping list":                       {"dirs: {a: b}\n", "line 1: cannot unmarshal a mapping into dirs: want a list"},
		"two documents":                      {"dirs: [a]\n---\ndirs: [b]\n", "line 2: more than one YAML document"},
		"syntax, line 3":                     {"env:\n  A: b\n C: d\n", "line 3: did not find expected key"},
		"multi-line value of the wrong type": {"dirs: |\n  a\n  b\n", "line 1: cannot unmarshal a string (\"a\\nb\\n\") into dirs: want a list"},
		"not YAML after the first document":  {" &00000:\n0", ""},
	} {
		var c config
		err := yamldoc.Decode([]byte(tc.doc), &c)
		var de *yamldoc.Error
		if err == nil || (tc.want != "" && err.Error() != tc.want) || !errors.As(err, &de) || de.Line == 0 {
			t.Errorf("%s: error %v\nwant %s", name, err, tc.want)
		}
	}
	var c config
	if err := yamldoc.Decode([]byte("env: {A: b}\nlimits: {files: 3}\n"), &c); err != nil || c.Env["A"] != "b" || c.Limits.Files != 3 {
		t.Errorf("valid document: %+v, %v", c, err)
	}
	if err := yamldoc.Decode([]byte("  \n# nothing\n"), &c); err != nil {
		t.Errorf("empty document: %v", err)
	}
}
