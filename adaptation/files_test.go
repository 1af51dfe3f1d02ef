package adaptation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startBounded starts rt's Adaptation and fails the test if Start does
// not return within bound (a configuration file that blocks its reader
// would hang it).
func startBounded(t *testing.T, rt *testRuntime, bound time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		done <- rt.a.Start(ctx)
	}()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(bound):
		t.Fatalf("Start did not return within %v", bound)
	}
}

// nobody is the owner given to files that must not be trusted.
const nobody = 65534

// skipUnlessRoot skips a test that gives a file to another user.
func skipUnlessRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
}

// TestConfigFileRules checks that a pre-installed plugin's configuration
// file is read only if it is a regular file of the runtime's (root's or
// the effective user's), not writable by others: a FIFO or /dev/zero
// under the file's name must neither hang Start nor exhaust memory, and
// the plugin is skipped with the reason in the log. A symbolic link to a
// trusted file is followed.
func TestConfigFileRules(t *testing.T) {
	for _, c := range []struct {
		name   string
		root   bool
		make   func(t *testing.T, path string)
		reason string // "" if the plugin starts with "linked-config"
	}{
		{"fifo", false, func(t *testing.T, path string) { must(t, syscall.Mkfifo(path, 0o644)) }, "named pipe"},
		{"dev-zero", false, func(t *testing.T, path string) { must(t, os.Symlink("/dev/zero", path)) }, "not a regular file"},
		{"group-writable", false, func(t *testing.T, path string) {
			must(t, os.WriteFile(path, []byte("x"), 0o644))
			must(t, os.Chmod(path, 0o664))
		}, "writable by its group or others"},
		{"other-owner", true, func(t *testing.T, path string) {
			must(t, os.WriteFile(path, []byte("x"), 0o644))
			must(t, os.Chown(path, nobody, nobody))
		}, "owned by uid 65534"},
		{"symlink-to-trusted", false, func(t *testing.T, path string) {
			target := filepath.Join(filepath.Dir(path), "real.txt")
			must(t, os.WriteFile(target, []byte("linked-config"), 0o644))
			must(t, os.Symlink(target, path))
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.root {
				skipUnlessRoot(t)
			}
			rt := newTestRuntime(t, []testPlugin{{"10-alpha", helperArgs("stub")}})
			c.make(t, filepath.Join(rt.conf, "10-alpha.conf"))
			startBounded(t, rt, 20*time.Second)
			_, registered := rt.plugin("10-alpha")
			if c.reason == "" {
				rt.logs.wait(t, "config", output("10-alpha", "CONFIG"))
				if got := rt.logs.lines("10-alpha", "CONFIG"); len(got) != 1 || !strings.HasPrefix(got[0], `CONFIG "linked-config"`) {
					t.Errorf("config through a symbolic link: %q", got)
				}
				return
			}
			if registered {
				t.Errorf("%s: the plugin started", c.name)
			}
			if len(rt.logs.find(func(r logRecord) bool {
				return r.msg == "skipping plugin with unreadable configuration" && strings.Contains(r.attrs["error"], c.reason)
			})) != 1 {
				t.Errorf("no log line saying the configuration was refused because %q", c.reason)
			}
		})
	}
}

// TestPluginFileRules checks that a file of the plugin directory is run
// or loaded only if it is a regular file of root's or the effective
// user's that its group and others cannot write, reached through
// directories and symbolic links that only they can change: every other
// file is skipped with the reason in the log, and the trusted plugin
// next to them runs.
func TestPluginFileRules(t *testing.T) {
	script := []byte("#!/bin/sh\nexit 0\n")
	module := []byte("\x00asm\x01\x00\x00\x00")
	rt := newTestRuntime(t, []testPlugin{{"10-alpha", helperArgs("stub")}})
	write := func(name string, content []byte, mode os.FileMode) string {
		path := filepath.Join(rt.dir, name)
		must(t, os.WriteFile(path, content, 0o600))
		must(t, os.Chmod(path, mode))
		return path
	}
	want := map[string]string{ // entry: reason in the skip line
		"20-groupw":  "writable by its group or others",
		"21-otherw":  "writable by its group or others",
		"22-wasmgw":  "writable by its group or others",
		"23-viaopen": "writable by its group or others",
	}
	write("20-groupw", script, 0o775)
	write("21-otherw", script, 0o757)
	write("22-wasmgw", module, 0o664)
	// A trusted file reached through a directory anyone may change.
	open := filepath.Join(filepath.Dir(rt.dir), "open")
	must(t, os.Mkdir(open, 0o755))
	must(t, os.Chmod(open, 0o777))
	must(t, os.WriteFile(filepath.Join(open, "plugin"), script, 0o755))
	must(t, os.Symlink(filepath.Join(open, "plugin"), filepath.Join(rt.dir, "23-viaopen")))
	if os.Geteuid() == 0 {
		must(t, os.Chown(write("24-nobody", script, 0o755), nobody, nobody))
		want["24-nobody"] = "owned by uid 65534"
		must(t, os.Chown(write("25-wasmnobody", module, 0o644), nobody, nobody))
		want["25-wasmnobody"] = "owned by uid 65534"
		link := filepath.Join(rt.dir, "26-nobodylink")
		must(t, os.Symlink(filepath.Join(rt.dir, "20-groupw"), link))
		must(t, os.Lchown(link, nobody, nobody))
		want["26-nobodylink"] = "owned by uid 65534"
	}
	startBounded(t, rt, hangGuard)
	if _, ok := rt.plugin("10-alpha"); !ok {
		t.Error("the trusted plugin 10-alpha did not start")
	}
	for entry, reason := range want {
		if _, ok := rt.plugin(entry); ok {
			t.Errorf("%s registered", entry)
		}
		if len(rt.logs.find(func(r logRecord) bool {
			return strings.HasPrefix(r.msg, "skipping") && strings.HasSuffix(r.attrs["path"], entry) &&
				strings.Contains(r.attrs["error"], reason)
		})) != 1 {
			t.Errorf("%s: no skip log line saying %q", entry, reason)
		}
		if len(rt.logs.find(func(r logRecord) bool {
			return r.msg == "launched pre-installed plugin" && r.attrs["plugin"] == entry
		})) != 0 {
			t.Errorf("%s was launched", entry)
		}
	}
}

// TestConfigFileSize checks that a configuration file larger than the
// limit (DefaultMaxPluginConfigSize, or WithMaxPluginConfigSize's) is
// not read: its plugin is skipped with the reason in the log.
func TestConfigFileSize(t *testing.T) {
	for _, c := range []struct {
		name   string
		size   int
		opts   []Option
		reason string
	}{
		{"default limit", DefaultMaxPluginConfigSize + 1, nil, "1048577 bytes, over the limit of 1048576"},
		{"option", 11, []Option{WithMaxPluginConfigSize(10)}, "11 bytes, over the limit of 10"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := newTestRuntime(t, []testPlugin{{"10-alpha", helperArgs("stub")}}, c.opts...)
			must(t, os.WriteFile(filepath.Join(rt.conf, "alpha.conf"), make([]byte, c.size), 0o644))
			startBounded(t, rt, hangGuard)
			if _, ok := rt.plugin("10-alpha"); ok {
				t.Error("the plugin started")
			}
			if len(rt.logs.find(func(r logRecord) bool {
				return r.msg == "skipping plugin with unreadable configuration" && strings.Contains(r.attrs["error"], c.reason)
			})) != 1 {
				t.Errorf("no log line saying the configuration was refused because %q", c.reason)
			}
		})
	}
}

// TestUntrustedDirectories checks that Start fails, saying why, if the
// plugin directory or the configuration directory (or a directory above
// them) may be written by others: they could add plugins or
// configurations.
func TestUntrustedDirectories(t *testing.T) {
	for _, c := range []struct {
		name   string
		dir    func(rt *testRuntime) string
		mode   os.FileMode
		reason string
	}{
		{"plugin directory", func(rt *testRuntime) string { return rt.dir }, 0o777, "plugin directory refused"},
		{"plugin directory, sticky", func(rt *testRuntime) string { return rt.dir }, 0o777 | os.ModeSticky, "plugin directory refused"},
		{"configuration directory", func(rt *testRuntime) string { return rt.conf }, 0o775, "plugin configuration directory refused"},
		{"above both", func(rt *testRuntime) string { return filepath.Dir(rt.dir) }, 0o757, "plugin directory refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt := newTestRuntime(t, []testPlugin{{"10-alpha", helperArgs("stub")}})
			must(t, os.Chmod(c.dir(rt), c.mode))
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			err := rt.a.Start(ctx)
			if err == nil || !strings.Contains(err.Error(), c.reason) || !strings.Contains(err.Error(), "writable by its group or others") {
				t.Errorf("Start: %v, want %q, writable by its group or others", err, c.reason)
			}
			if _, ok := rt.plugin("10-alpha"); ok {
				t.Error("the plugin started")
			}
		})
	}
}

// TestWASMModuleSize checks that a WASM module larger than
// WithMaxWASMModuleSize is not read: the plugin is not loaded, and the
// log says why.
func TestWASMModuleSize(t *testing.T) {
	rt := newTestRuntime(t, nil, WithDisabledExternalConnections(), WithMaxWASMModuleSize(64))
	installFakeWASM(t, rt, "10-wa")
	rt.start(t)
	if len(rt.logs.find(func(r logRecord) bool {
		return r.msg == "pre-installed plugin failed to start" && strings.Contains(r.attrs["error"], "over the limit of 64")
	})) != 1 {
		t.Error("no log line saying the module is over the size limit")
	}
}
