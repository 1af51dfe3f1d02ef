package layering

import (
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeLayout holds README.md's Layout table to the tree: every
// package directory of the main module, every other module and every
// top-level directory and directory of deploy/ is named in it, and every
// path it names exists.
func TestReadmeLayout(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := layoutRows(string(readme))
	if len(rows) < 10 {
		t.Fatalf("README.md's Layout table has %d rows; did its heading (## Layout) change?", len(rows))
	}
	named, stale := namedPaths(rows, func(p string) bool {
		_, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p)))
		return err == nil
	})
	for _, p := range stale {
		t.Errorf("README.md's Layout table names %s, which does not exist", p)
	}
	want := layoutDirs(t, repoRoot, moduleFiles(t, repoRoot))
	if len(want) < 50 {
		t.Fatalf("found %d directories to name; is %s the repository's root?", len(want), repoRoot)
	}
	for _, d := range unnamed(want, named) {
		t.Errorf("README.md's Layout table does not name %s/", d)
	}
}

// TestLayoutCheckFindsGaps feeds the layout check a table with a missing
// package, a stale path and the relative names it accepts, so that a
// check that stopped matching fails here.
func TestLayoutCheckFindsGaps(t *testing.T) {
	readme := "# x\n\n## Layout\n\n| path | what |\n| --- | --- |\n" +
		"| `api/`, `docs/protocol.md` | the messages |\n" +
		"| `plugins/` | the samples `logger` and `gone`; `plugins/internal/` holds `allow` |\n" +
		"| `old/pkg` | removed |\n" +
		"\n## Next\n\n| `stub/` | not the table |\n"
	exists := map[string]bool{"docs/protocol.md": true, "api": true, "plugins": true, "plugins/logger": true, "plugins/internal": true, "plugins/internal/allow": true}
	named, stale := namedPaths(layoutRows(readme), func(p string) bool { return exists[p] })
	if want := []string{"old/pkg"}; !slices.Equal(stale, want) {
		t.Errorf("stale paths %q, want %q", stale, want)
	}
	dirs := []string{"api", "docs", "plugins/logger", "plugins/logger/cmd/logger", "plugins/internal/allow", "stub", "plugins/gone"}
	if got, want := unnamed(dirs, named), []string{"plugins/gone", "stub"}; !slices.Equal(got, want) {
		t.Errorf("unnamed %q, want %q", got, want)
	}
}

// layoutRows returns the cells of the rows of the table in the section
// "## Layout" of a README.
func layoutRows(readme string) [][]string {
	_, section, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		return nil
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var rows [][]string
	for line := range strings.Lines(section) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "| ---") {
			continue
		}
		rows = append(rows, strings.Split(strings.Trim(line, "|"), " | "))
	}
	return rows
}

var (
	// codeSpan is a Markdown code span.
	codeSpan = regexp.MustCompile("`([^`]+)`")
	// bareName is a code span that names a directory relative to the
	// row's last directory ending in "/" (`chaos` after `tests/`).
	bareName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*/?$`)
)

// namedPaths returns the slash-separated paths, relative to the
// repository's root and without a trailing "/", that the rows name, and
// those of them that do not exist. A row names the paths in its first cell
// and, in its other cells, a code span with a "/" whose first element
// exists, and a bare name relative to the last code span ending in "/"
// before it (`plugins/internal/` ... `allow`) if that exists; other code
// spans (`adaptation.WithPolicy`, `default.yaml`) name no directory.
func namedPaths(rows [][]string, exists func(string) bool) (named map[string]bool, stale []string) {
	named = map[string]bool{}
	for _, row := range rows {
		base := ""
		for i, cell := range row {
			for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
				span := m[1]
				p := path.Clean(span)
				switch {
				case i == 0 || (strings.Contains(span, "/") && !bareName.MatchString(span) && exists(strings.SplitN(p, "/", 2)[0])):
					if !exists(p) {
						stale = append(stale, p)
						continue
					}
				case bareName.MatchString(span) && base != "":
					p = path.Join(base, p)
					if !exists(p) {
						continue
					}
				default:
					continue
				}
				named[p] = true
				if strings.HasSuffix(span, "/") {
					base = p
				}
			}
		}
	}
	return named, stale
}

// unnamed returns the directories of dirs that named does not cover, in
// order. A directory is covered if it is named, if it is a top-level
// directory that holds a named path (`docs/protocol.md`), or if it is a
// sample's command, X/cmd/NAME for a named X whose last element is NAME.
func unnamed(dirs []string, named map[string]bool) []string {
	var out []string
	for _, d := range dirs {
		if named[d] {
			continue
		}
		if !strings.Contains(d, "/") && slices.ContainsFunc(slices.Collect(maps.Keys(named)), func(p string) bool { return under(p, d) }) {
			continue
		}
		if parent, name, ok := strings.Cut(d, "/cmd/"); ok && named[parent] && path.Base(parent) == name {
			continue
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// layoutDirs returns what README's Layout table must name, relative to
// the repository's root: the package directories of files (the main
// module's Go files), the root of every other module, and every
// top-level directory and directory of deploy/ that is not hidden.
func layoutDirs(t *testing.T, root string, files []goFile) []string {
	t.Helper()
	dirs := map[string]bool{}
	for _, f := range files {
		if f.dir != "." {
			dirs[f.dir] = true
		}
	}
	for _, parent := range []string{".", "deploy"} {
		entries, err := os.ReadDir(filepath.Join(root, parent))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				dirs[path.Join(parent, e.Name())] = true
			}
		}
	}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" && filepath.Dir(p) != filepath.Clean(root) {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			dirs[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(dirs))
	for d := range dirs {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}
