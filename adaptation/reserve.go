package adaptation

import (
	"os"
	"path/filepath"

	"github.com/nrikit/nrikit/api"
)

// Reserved names. The administrator's policy for a plugin (overrides,
// scopes, required status) and its configuration file are keyed by its
// full name, IDX-NAME. An external plugin chooses its own name, so the
// names of the plugins the runtime starts itself are reserved for the
// Adaptation's lifetime: a builtin plugin's from New on, a pre-installed
// plugin's from Start on, whether or not it is running (it may be
// waiting to be restarted, or its WASM module compiling). An external
// plugin registering under a reserved name is refused (see admit). The
// same name under another index is another plugin, with no policy of its
// own unless the administrator gave it one, and is not reserved.

// reserveBuiltinNames reserves the names of the builtin plugins (New).
func (a *Adaptation) reserveBuiltinNames() {
	for _, b := range a.cfg.builtins {
		a.reserved[api.FullPluginName(b.idx, b.name)] = "a builtin plugin"
	}
}

// reservePreinstalledNames reserves the names of the pre-installed
// plugins: those discovered, and every other file of the plugin
// directory named IDX-NAME, launched or not (a file skipped because of
// its mode, owner or configuration still names a plugin the
// administrator installed). It is called by Start before the socket is
// set up.
func (a *Adaptation) reservePreinstalledNames(launch []launchSpec) {
	names := make(map[string]string, len(launch))
	for _, l := range launch {
		names[l.full] = l.path
	}
	if dir := a.cfg.pluginDir; dir != "" {
		// Errors were reported by discover; what can be read is reserved.
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			full := e.Name()
			if _, ok := names[full]; ok {
				continue
			}
			if _, _, err := api.ParsePluginName(full); err == nil {
				names[full] = filepath.Join(dir, full)
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for full, path := range names {
		if _, ok := a.reserved[full]; !ok {
			a.reserved[full] = "the pre-installed plugin " + path
		}
	}
}
