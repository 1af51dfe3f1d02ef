package stub

import (
	"testing"

	"github.com/nrikit/nrikit/api"
)

func TestResolveIdentity(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name   string
		cfg    config
		env    map[string]string
		exe    string
		want   string
		source connSource
		fails  bool
	}{
		{"from executable", config{}, nil, "/usr/libexec/nri/10-logger", "10-logger", dialSocket, false},
		{"options win over executable", config{name: "n", idx: "20"}, nil, "/bin/10-logger", "20-n", dialSocket, false},
		{"index from executable", config{name: "n"}, nil, "/bin/30-logger", "30-n", dialSocket, false},
		{"name from executable base", config{idx: "40"}, nil, "/bin/logger", "40-logger", dialSocket, false},
		{"no index", config{name: "n"}, nil, "/bin/logger", "", dialSocket, true},
		{"environment wins", config{name: "n", idx: "20"},
			map[string]string{api.PluginSocketEnvVar: "3", api.PluginNameEnvVar: "envname", api.PluginIdxEnvVar: "50"},
			"/bin/x", "50-envname", inheritedFD, false},
		{"bad socket variable", config{idx: "10"}, map[string]string{api.PluginSocketEnvVar: "three"}, "/bin/x", "", dialSocket, true},
		{"name env ignored without socket", config{idx: "10", name: "opt"}, map[string]string{api.PluginNameEnvVar: "envname"}, "/bin/x", "10-opt", dialSocket, false},
		{"invalid env index", config{}, map[string]string{api.PluginSocketEnvVar: "3", api.PluginNameEnvVar: "a", api.PluginIdxEnvVar: "5"}, "/bin/x", "", inheritedFD, true},
	} {
		id, err := resolveIdentity(&tc.cfg, env(tc.env), tc.exe)
		if (err != nil) != tc.fails {
			t.Errorf("%s: error = %v, want failure %v", tc.name, err, tc.fails)
			continue
		}
		if err == nil && (api.FullPluginName(id.idx, id.name) != tc.want || id.source != tc.source) {
			t.Errorf("%s: got %s-%s from %v, want %s from %v", tc.name, id.idx, id.name, id.source, tc.want, tc.source)
		}
	}
}
