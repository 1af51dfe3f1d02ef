package compatapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// packages are upstream's packages that runtimes and plugins import, by
// their path in the module ("." is the root package). pkg/api comes
// first: the packages that re-export its types are compared on what they
// add.
var packages = []string{
	"pkg/api",
	".",
	"pkg/adaptation",
	"pkg/adaptation/builtin",
	"pkg/log",
	"pkg/net",
	"pkg/net/multiplex",
	"pkg/plugin",
	"pkg/runtime-tools/generate",
	"pkg/stub",
	"pkg/version",
	"plugins/default-validator",
	"plugins/default-validator/builtin",
	"types/v1",
}

// platforms are the targets compared: the runtimes' (containerd builds
// its NRI code for windows and darwin too) and WASM plugins'.
var platforms = []string{"linux/amd64", "windows/amd64", "darwin/arm64", "wasip1/wasm"}

// upstreamOnLinux: upstream builds every package of the table for linux;
// elsewhere it may not (its stub and runtime do not build for wasip1).
const upstreamOnLinux = "linux/amd64"

// An exclusion is a difference compat makes on purpose: patterns match
// finding keys (path.Match syntax: * matches any run of characters but /).
type exclusion struct {
	patterns []string
	reason   string
}

// excluded are the differences compat makes on purpose. Each pattern
// must match a finding on some platform, so that the list shrinks when
// compat catches up.
var excluded = []exclusion{{
	patterns: []string{"pkg/api.*VT", "pkg/api.ErrIntOverflow", "pkg/api.ErrInvalidLength", "pkg/api.ErrUnexpectedEndOfGroup"},
	reason: "vtprotobuf's codec (MarshalVT, SizeVT, UnmarshalVT and its errors), which upstream's ttrpc codec uses: " +
		"compat's messages are nrikit's, encoded by protobuf-go and nrikit's codecs to the same bytes (internal/testing/wirecheck)",
}, {
	patterns: []string{"pkg/api.PluginPlugin", "pkg/api.NewPluginPlugin", "pkg/api.Wazero*", "pkg/api.DefaultWazeroRuntime"},
	reason: "upstream's WASM plugin host (go-plugin's generated loader over wazero), behind its pkg/adaptation: " +
		"compat's pkg/adaptation loads WASM plugins with nrikit's host; no runtime or plugin calls it",
}, {
	patterns: []string{"pkg/api.*.Strip", "pkg/api.FieldOwners.*", "pkg/api.OwningPlugins.Claim*", "pkg/api.OwningPlugins.Clear*",
		"pkg/api.ValidateContainerAdjustmentRequest.Add*", "pkg/api.ValidateContainerAdjustmentResponse.ValidationResult"},
	reason: "upstream's runtime's bookkeeping while it merges plugins' answers (dropping empty fields, recording and clearing " +
		"each field's owner, building the validation request and its result): nrikit's runtime does it in merge/ and " +
		"validator/; a validator plugin reads owners with OwningPlugins' *Owner methods, which compat has",
}, {
	patterns: []string{"pkg/api.Container.GetCreatedAtTime", "pkg/api.Container.GetStartedAtTime", "pkg/api.Container.GetFinishedAtTime",
		"pkg/api.Event.PrettyName", "pkg/api.EventMask.PrettyString", "pkg/api.EventMask.Set", "pkg/api.EventMask.Clear",
		"pkg/api.Hooks.Append", "pkg/api.Hooks.Hooks", "pkg/api.LinuxDevice.AccessString", "pkg/api.LinuxDevice.Cmp",
		"pkg/api.LinuxRdt.Copy", "pkg/api.Mount.Cmp", "pkg/api.ValidateContainerAdjustmentRequest.GetPluginMap"},
	reason: "methods of the protocol's types: compat's types are nrikit's api types (aliases, so values pass to nrikit's " +
		"libraries unconverted), and nrikit's api lacks these helpers (only upstream's own default validator, which compat " +
		"replaces, calls one: GetPluginMap). nrikit's EventMask.Set and Clear return the changed mask and leave the " +
		"receiver alone, where upstream's change it: code that ignores their result works on upstream only",
}, {
	patterns: []string{"pkg/api.InferVersionFromRuntime"},
	reason: "the table of runtime releases and their NRI versions is nrikit's stub's (stub/internal/core), which infers " +
		"a runtime's version itself (Stub.RuntimeNRIVersion); no plugin or runtime calls it",
}, {
	patterns: []string{"pkg/adaptation.Adaptation.Lock", "pkg/adaptation.Adaptation.Unlock", "pkg/adaptation.Adaptation.TryLock",
		"pkg/adaptation.Adaptation.Mutex"},
	reason: "upstream's Adaptation embeds the mutex it holds across plugin calls; nrikit's runtime holds no lock across a " +
		"plugin call and exposes none (no runtime takes it: containerd and CRI-O use locks of their own)",
}, {
	patterns: []string{"pkg/adaptation.Option"},
	reason:   "options are opaque in compat (a func of its own options, not of *Adaptation): a runtime composes them; none writes its own",
}, {
	patterns: []string{"pkg/net/multiplex"},
	reason: "upstream's connection multiplexer, which only its own stub and runtime import; nrikit's (internal/mux) " +
		"speaks the same framing and is internal",
}, {
	patterns: []string{"pkg/runtime-tools/generate.Generator.*", "pkg/runtime-tools/generate.UnderlyingGenerator.*"},
	reason: "compat's generator edits the spec the runtime's generator returns (ocispec.Apply on Spec()), so " +
		"UnderlyingGenerator asks only for Spec, which runtime-tools' generator has: the Adjust* steps and the generator " +
		"methods promoted through the embedded interface are not offered; containerd and CRI-O call Adjust only",
}}

// TestCompatOffersUpstreamAPI lists, for each platform, what compat's
// packages lack or declare differently from upstream v0.12.5's (package
// apidiff, run by its command: type-checking under the race detector is
// ten times slower), and fails on each finding the exclusion table does
// not explain.
func TestCompatOffersUpstreamAPI(t *testing.T) {
	compatDir, err := filepath.Abs("../../compat/nri")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args := append([]string{"run", "./internal/apidiff/cmd/apidiff", "-other", compatDir,
		"-platforms", strings.Join(platforms, ",")}, packages...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	used := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var line struct{ Platform, Key, What, Unbuilt, Why string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("apidiff's output %q: %v", sc.Text(), err)
		}
		switch {
		case line.Unbuilt != "" && line.Platform == upstreamOnLinux:
			t.Errorf("%s: upstream's %s does not build: %s (the module's go.sum lacks what it needs? see imports_test.go)",
				line.Platform, line.Unbuilt, line.Why)
		case line.Unbuilt != "":
			t.Logf("%s: upstream does not build %s: %s", line.Platform, line.Unbuilt, line.Why)
		default:
			if p := matchExclusion(line.Key); p != "" {
				used[p] = true
				continue
			}
			t.Errorf("%s: %s: %s", line.Platform, line.Key, line.What)
		}
	}
	if t.Failed() {
		return
	}
	for _, x := range excluded {
		for _, p := range x.patterns {
			if !used[p] {
				t.Errorf("exclusion %q matches nothing on any platform: remove it", p)
			}
		}
	}
}

// matchExclusion returns the exclusion pattern key matches, or "".
func matchExclusion(key string) string {
	for _, x := range excluded {
		for _, p := range x.patterns {
			if ok, _ := path.Match(p, key); ok {
				return p
			}
		}
	}
	return ""
}
