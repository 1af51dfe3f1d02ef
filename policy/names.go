package policy

import (
	"fmt"
	"path"
	"slices"

	"github.com/nrikit/nrikit/api"
)

// NamedWithoutExtension returns where the policy names the plugin
// idx-name without the file name extension its name carries (such as
// "batchenv" for "batchenv.wasm"), in grants and required entries that
// therefore are not the plugin's: each as "policy.yaml:12: grants[1]
// names batchenv" or "required names batchenv". A runtime names a plugin
// of its plugin directory after the file, extension and all, as upstream
// NRI does: the file 50-batchenv.wasm registers as batchenv.wasm, so a
// grant for batchenv does not match it and the plugin gets the default
// grant. A grant is listed only if the plugin gets the default grant; it
// is nil for a name without an extension, and on the nil *Policy.
func (p *Policy) NamedWithoutExtension(idx, name string) []string {
	ext := path.Ext(name)
	if p == nil || ext == "" || ext == name {
		return nil
	}
	stem := name[:len(name)-len(ext)]
	full, stemFull := api.FullPluginName(idx, name), api.FullPluginName(idx, stem)
	var out []string
	if p.GrantFor(idx, name) == p.def {
		for _, g := range p.grants {
			for i := range g.patterns {
				if pt := &g.patterns[i]; pt.match(idx, stem, stemFull) && !pt.match(idx, name, full) {
					out = append(out, fmt.Sprintf("%s names %s", g.label, pt.text))
					break
				}
			}
		}
	}
	if !slices.Contains(p.required, name) && !slices.Contains(p.required, full) {
		for _, r := range p.required {
			if r == stem || r == stemFull {
				out = append(out, "required names "+r)
			}
		}
	}
	return out
}
