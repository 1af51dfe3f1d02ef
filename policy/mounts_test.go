package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nrikit/nrikit/api"
)

// The mount routes of issue 37 ("Trust, second step"): each test names
// its route.

// mounts returns an adjustment of mounts.
func mounts(ms ...*api.Mount) *api.ContainerAdjustment { return &api.ContainerAdjustment{Mounts: ms} }

// bind returns a bind mount of src at dst with opts.
func bind(src, dst string, opts ...string) *api.Mount {
	return &api.Mount{Source: src, Destination: dst, Type: "bind", Options: opts}
}

// checkCases checks each case against g, naming the reason when want
// has one ("field: reason part").
func checkCases(t *testing.T, g *Grant, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		vs := g.CheckAdjustment(testPod, testCtr, tc.adj)
		want, reason, _ := strings.Cut(tc.want, ": ")
		if got := fields(vs); got != want {
			t.Errorf("%s: violations %q, want %q: %v", tc.name, got, want, vs)
			continue
		}
		if reason != "" && !strings.Contains(vs[0].Reason, reason) {
			t.Errorf("%s: reason %q, want it to say %q", tc.name, vs[0].Reason, reason)
		}
	}
}

// TestRouteDotDot: paths with "." or ".." elements, repeated slashes or
// relative forms are refused whatever the patterns say (route ".."):
// the patterns are matched on the string, the runtime cleans it later.
func TestRouteDotDot(t *testing.T) {
	g := mustParse(t, `
default:
  adjust:
    mounts:
      sources: [{path: /srv/models}]
      destinations: ["/models/*"]
      remove: ["/models/*"]
    hooks: ["/opt/nri-hooks/*"]
    devices: [{path: "/dev/nvidia*", type: c, major: 195}]
`).GrantFor("10", "x")
	checkCases(t, g, []ruleCase{
		{"clean destination", mounts(bind("/srv/models/a", "/models/a", "ro")), ""},
		{"destination up and out", mounts(bind("/srv/models/a", "/models/../etc", "ro")), "mounts: destination"},
		{"destination with a dot", mounts(bind("/srv/models/a", "/models/./a", "ro")), "mounts: destination"},
		{"destination with repeated slashes", mounts(bind("/srv/models/a", "/models//a", "ro")), "mounts: destination"},
		{"destination with a trailing slash", mounts(bind("/srv/models/a", "/models/a/", "ro")), "mounts: destination"},
		{"relative destination", mounts(bind("/srv/models/a", "models/a", "ro")), "mounts: destination"},
		{"removal up and out", mounts(&api.Mount{Destination: "-/models/../proc"}), "mounts: destination"},
		{"removal allowed", mounts(&api.Mount{Destination: "-/models/a"}), ""},
		{"source with a dot", mounts(bind("/srv/models/./a", "/models/a", "ro")), "mounts: source"},
		{"source with repeated slashes", mounts(bind("/srv//models/a", "/models/a", "ro")), "mounts: source"},
		{"source up and out", mounts(bind("/srv/models/../../etc", "/models/a", "ro")), "mounts: source"},
		{"hook up and out", hooks("/opt/nri-hooks/../../bin/sh", nil), "hooks: not an absolute clean path"},
		{"hook with repeated slashes", hooks("/opt/nri-hooks//x", nil), "hooks: not an absolute clean path"},
		{"relative hook", hooks("opt/nri-hooks/x", nil), "hooks: not an absolute clean path"},
		{"clean hook", hooks("/opt/nri-hooks/x", nil), ""},
		{"device up and out", linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "/dev/nvidia0/../sda", Type: "c", Major: 195}}}), "linux.devices: not an absolute clean path"},
		{"device removal up and out", linux(&api.LinuxContainerAdjustment{Devices: []*api.LinuxDevice{{Path: "-/dev/nvidia0/../sda"}}}), "linux.devices: not an absolute clean path"},
	})
}

// TestRouteReadOnlyInOrder: a mount's read-only state is what it ends
// with once its options are applied in order, as runc applies them (ro
// and rw set and clear MS_RDONLY, rro and rrw set and clear the
// recursive read-only attribute after it); anything ending read-write on
// a read-only source is refused (route "ro then rw").
func TestRouteReadOnlyInOrder(t *testing.T) {
	g := mustParse(t, `
default:
  adjust:
    mounts:
      sources: [{path: /srv/models}]
      types: [tmpfs]
      options: ["*"]
`).GrantFor("10", "x")
	const rw = "mounts: read-write"
	checkCases(t, g, []ruleCase{
		{"ro", mounts(bind("/srv/models/a", "/models", "rbind", "ro")), ""},
		{"ro then rw", mounts(bind("/srv/models/a", "/models", "rbind", "ro", "rw")), rw},
		{"rw then ro", mounts(bind("/srv/models/a", "/models", "rbind", "rw", "ro")), ""},
		{"rro", mounts(bind("/srv/models/a", "/models", "rbind", "rro")), ""},
		{"rro then rrw", mounts(bind("/srv/models/a", "/models", "rbind", "rro", "rrw")), rw},
		{"ro and rrw", mounts(bind("/srv/models/a", "/models", "rbind", "ro", "rrw")), rw},
		{"rrw then ro", mounts(bind("/srv/models/a", "/models", "rbind", "rrw", "ro")), rw},
		{"rw and rro", mounts(bind("/srv/models/a", "/models", "rbind", "rw", "rro")), ""},
		{"neither", mounts(bind("/srv/models/a", "/models", "rbind")), rw},
		{"remount read-only", mounts(&api.Mount{Source: "tmpfs", Destination: "/models", Type: "tmpfs", Options: []string{"remount", "ro"}}), ""},
		{"remount read-write", mounts(&api.Mount{Source: "tmpfs", Destination: "/models", Type: "tmpfs", Options: []string{"remount", "rw"}}), "mounts: remount"},
		{"bind remount read-write", mounts(bind("/srv/models/a", "/models", "bind", "remount")), "mounts: remount"},
	})
}

// TestRouteSymlinks: a source under a granted directory is resolved on
// the host as the kernel will, and refused if that leaves the directory
// (route "symlinks").
func TestRouteSymlinks(t *testing.T) {
	root := t.TempDir()
	models := filepath.Join(root, "models")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(models, "llama"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "rw", "cache"), 0o755))
	must(os.Symlink("/", filepath.Join(models, "host")))
	must(os.Symlink("../rw", filepath.Join(models, "up")))
	must(os.Symlink("llama", filepath.Join(models, "latest")))
	must(os.Symlink(filepath.Join(models, "llama"), filepath.Join(models, "abs-latest")))
	must(os.Symlink("latest/../../rw", filepath.Join(models, "twisted")))
	must(os.Symlink("loop", filepath.Join(models, "loop")))
	// The granted directory itself reached through a symbolic link.
	must(os.Symlink(models, filepath.Join(root, "models-link")))

	g := mustParse(t, `
default:
  adjust:
    mounts:
      sources: [{path: `+models+`, readWrite: true}, {path: `+filepath.Join(root, "models-link")+`}]
`).GrantFor("10", "x")
	const leaves = "mounts: resolves to"
	checkCases(t, g, []ruleCase{
		{"a directory", mounts(bind(models+"/llama", "/models", "rbind", "rw")), ""},
		{"a link to the root", mounts(bind(models+"/host", "/models", "rbind", "rw")), leaves},
		{"under a link to the root", mounts(bind(models+"/host/etc", "/models", "rbind", "ro")), leaves},
		{"a relative link up and out", mounts(bind(models+"/up", "/models", "rbind", "rw")), leaves},
		{"a relative link that stays", mounts(bind(models+"/latest", "/models", "rbind", "rw")), ""},
		{"an absolute link that stays", mounts(bind(models+"/abs-latest", "/models", "rbind", "rw")), ""},
		{"a link whose .. leaves", mounts(bind(models+"/twisted/cache", "/models", "rbind", "rw")), leaves},
		{"a loop", mounts(bind(models+"/loop", "/models", "rbind", "rw")), "mounts: symbolic links"},
		{"not there yet", mounts(bind(models+"/missing/x", "/models", "rbind", "rw")), ""},
		{"through a linked grant", mounts(bind(root+"/models-link/llama", "/models", "rbind", "ro")), ""},
		{"out of a linked grant", mounts(bind(root+"/models-link/host", "/models", "rbind", "ro")), leaves},
	})
}

// TestRouteNoDestinations: without destinations a mount may not cover or
// remove the system paths, and removing a mount needs its own key,
// mounts.remove (route "no destinations").
func TestRouteNoDestinations(t *testing.T) {
	p := mustParse(t, `
grants:
  - plugins: [sources]
    adjust:
      mounts:
        sources: [{path: /srv}]
        types: [tmpfs]
  - plugins: [remover]
    adjust:
      mounts:
        remove: ["/scratch", "/proc"]
`)
	const system = "mounts: system path"
	checkCases(t, p.GrantFor("10", "sources"), []ruleCase{
		{"an ordinary destination", mounts(bind("/srv/a", "/data", "ro")), ""},
		{"over /etc/passwd", mounts(bind("/srv/passwd", "/etc/passwd", "ro")), system},
		{"over /etc", mounts(bind("/srv/etc", "/etc", "ro")), system},
		{"under /proc", mounts(bind("/srv/x", "/proc/sys", "ro")), system},
		{"over /sys", mounts(bind("/srv/x", "/sys", "ro")), system},
		{"under /dev", mounts(&api.Mount{Source: "tmpfs", Destination: "/dev/shm", Type: "tmpfs"}), system},
		{"over the root", mounts(bind("/srv/x", "/", "ro")), system},
		{"over the service account", mounts(bind("/srv/x", "/var/run/secrets/kubernetes.io/serviceaccount", "ro")), system},
		{"over /var", mounts(bind("/srv/x", "/var", "ro")), system},
		{"next to a system path", mounts(bind("/srv/x", "/etc/app", "ro")), ""},
		{"a prefix of a system path's name", mounts(bind("/srv/x", "/devices", "ro")), ""},
		{"removing /proc", mounts(&api.Mount{Destination: "-/proc"}), "mounts: removing"},
		{"removing anything", mounts(&api.Mount{Destination: "-/data"}), "mounts: removing"},
	})
	checkCases(t, p.GrantFor("10", "remover"), []ruleCase{
		{"removal granted", mounts(&api.Mount{Destination: "-/scratch"}), ""},
		{"removal of a system path granted by name", mounts(&api.Mount{Destination: "-/proc"}), ""},
		{"removal not granted", mounts(&api.Mount{Destination: "-/dev"}), "mounts: removing"},
		{"adding", mounts(bind("/srv/a", "/scratch", "ro")), "mounts: source"},
	})
}
