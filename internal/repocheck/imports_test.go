package repocheck

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// layers are the top-level folders from the ground floor up; a file may
// import a package of its own folder or of one listed before it.
// scripts/ is apart: its Go programs (benchmarks' load generators) may
// use anything.
var layers = []string{"internal", "seed", "netup", "apply", "boot", "images", "serve", "cmd", "scripts"}

// repoRoot is the folder holding go.mod, above this package's.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// modulePath reads the module's path from go.mod.
func modulePath(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}

// goFiles lists the repository's Go files, tests included, by path
// relative to root; caches, testdata and hidden folders are not code.
func goFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// edge is one import of a module package by a file.
type edge struct{ file, from, to string }

// moduleImports are the imports of the module's own packages in files,
// every file whatever its build constraints, tests included.
func moduleImports(t *testing.T, root, module string, files []string) []edge {
	t.Helper()
	var edges []edge
	fset := token.NewFileSet()
	for _, rel := range files {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatalf("%s: import %s: %v", rel, imp.Path.Value, err)
			}
			if pkg, ok := strings.CutPrefix(p, module+"/"); ok {
				edges = append(edges, edge{file: rel, from: filepath.ToSlash(filepath.Dir(rel)), to: pkg})
			}
		}
	}
	return edges
}

// topLevel is the top-level folder of a package path.
func topLevel(pkg string) string {
	top, _, _ := strings.Cut(pkg, "/")
	return top
}

// upwardImports lists, one line each, the imports that run up a floor
// and the files in a top-level folder that has no floor.
func upwardImports(edges []edge, files []string) []string {
	var bad []string
	for _, f := range files {
		if top := topLevel(f); !strings.Contains(f, "/") || !slices.Contains(layers, top) {
			bad = append(bad, fmt.Sprintf("%s: %s is no floor of the house (add it to layers, in its place)", f, top))
		}
	}
	for _, e := range edges {
		from, to := slices.Index(layers, topLevel(e.from)), slices.Index(layers, topLevel(e.to))
		if from >= 0 && to > from {
			bad = append(bad, fmt.Sprintf("%s: %s imports %s, a floor above it", e.file, e.from, e.to))
		}
	}
	slices.Sort(bad)
	return slices.Compact(bad)
}

// The check itself: every import in the tree runs down, tests included.
func TestImportsRunDown(t *testing.T) {
	root := repoRoot(t)
	files := goFiles(t, root)
	if len(files) < 100 {
		t.Fatalf("found %d Go files under %s: not the repository", len(files), root)
	}
	edges := moduleImports(t, root, modulePath(t, root), files)
	for _, line := range upwardImports(edges, files) {
		t.Error(line)
	}
}

// The check must see what it is for: an upward import, a sideways one
// and a folder outside the house, made up here.
func TestUpwardImportsFound(t *testing.T) {
	files := []string{"seed/ds/ds.go", "apply/users/users.go", "tools/x.go", "main.go"}
	edges := []edge{
		{file: "seed/ds/ds.go", from: "seed/ds", to: "apply/target"},
		{file: "seed/ds/ds.go", from: "seed/ds", to: "seed/yaml11"},
		{file: "apply/users/users.go", from: "apply/users", to: "internal/rootfs"},
		{file: "apply/users/users.go", from: "apply/users", to: "netup/model"},
	}
	got := upwardImports(edges, files)
	want := []string{
		"main.go: main.go is no floor of the house (add it to layers, in its place)",
		"seed/ds/ds.go: seed/ds imports apply/target, a floor above it",
		"tools/x.go: tools is no floor of the house (add it to layers, in its place)",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("upwardImports =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
