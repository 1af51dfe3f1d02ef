package scenario

import "testing"

// TestParseErrorLines checks that syntax errors are reported at the line
// of the mistake, not where yaml.v3's enclosing block starts, and that
// values of the wrong type name their field.
func TestParseErrorLines(t *testing.T) {
	for name, tc := range map[string]struct {
		doc  string
		want string
	}{
		"indentation in a list item": {
			"pods:\n  - name: p\n    namespace: ns\n   labels: {a: b}\nsteps: [{runPod: p}]\n",
			"s.yaml:4: did not find expected '-' indicator",
		},
		"indentation in a mapping": {
			"pods:\n  - name: p\n    labels:\n      a: b\n     c: d\nsteps: [{runPod: p}]\n",
			"s.yaml:5: did not find expected key",
		},
		"unterminated flow mapping": {
			"pods: [{name: p,\n  namespace: x]\nsteps: [{runPod: p}]\n",
			"s.yaml:2: did not find expected ',' or '}'",
		},
		"string for a number": {
			"pods:\n  - name: p\ncontainers:\n  - name: c\n    pod: p\n    resources:\n      cpuShares: lots\nsteps: [{runPod: p}]\n",
			`s.yaml:7: cannot unmarshal a string ("lots") into containers[0].resources.cpuShares: want a non-negative integer`,
		},
		"long string in a flow mapping": {
			"pods:\n  - name: p\ncontainers:\n  - {name: c, pod: p, resources: {cpuShares: 100, cpuQuota: abcdefghijklmno}}\nsteps: [{runPod: p}]\n",
			`s.yaml:4: cannot unmarshal a string ("abcdefg...") into containers[0].resources.cpuQuota: want an integer`,
		},
		"list for a mapping": {
			"pods:\n  - name: p\n    labels: [a, b]\nsteps: [{runPod: p}]\n",
			"s.yaml:3: cannot unmarshal a list into pods[0].labels: want a mapping (key: value)",
		},
		"mapping for a list": {
			"pods:\n  - name: p\ncontainers:\n  - name: c\n    pod: p\n    args: {a: b}\nsteps: [{runPod: p}]\n",
			"s.yaml:6: cannot unmarshal a mapping into containers[0].args: want a list",
		},
	} {
		_, err := Parse("s.yaml", []byte(tc.doc))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v\nwant %s", name, err, tc.want)
		}
	}
}
