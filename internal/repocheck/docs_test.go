package repocheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeMaxLines keeps the README a front door: what seedinit is, the
// two set-up commands, the boot in brief, the commands, where to read on.
const readmeMaxLines = 300

// markdownLink is [text](target) outside code; images too.
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// inlineCode is `code` on one line.
var inlineCode = regexp.MustCompile("`[^`]*`")

// docFiles are README.md and docs/*.md, relative to root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, p := range pages {
		files = append(files, "docs/"+filepath.Base(p))
	}
	return files
}

// withoutCode drops fenced code blocks and inline code, where a link is
// an example, not a link.
func withoutCode(text string) string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, inlineCode.ReplaceAllString(line, ""))
		}
	}
	return strings.Join(out, "\n")
}

// anchors are the ids GitHub gives a page's headings.
func anchors(text string) []string {
	var ids []string
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ' || r == '-':
				b.WriteRune('-')
			case r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r > 127:
				b.WriteRune(r)
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			ids = append(ids, fmt.Sprintf("%s-%d", id, n))
		} else {
			ids = append(ids, id)
		}
		seen[id]++
	}
	return ids
}

// brokenLinks lists the relative links of the pages that lead nowhere:
// no such file, or no such heading in it.
func brokenLinks(t *testing.T, root string, files []string) []string {
	t.Helper()
	var bad []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range markdownLink.FindAllStringSubmatch(withoutCode(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Join(root, filepath.Dir(f), file)
			if file == "" {
				path = filepath.Join(root, f)
			}
			rel, _ := filepath.Rel(root, path)
			if strings.HasPrefix(rel, "..") {
				bad = append(bad, fmt.Sprintf("%s: %s leads out of the repository", f, target))
				continue
			}
			page, err := os.ReadFile(path)
			if err != nil {
				if fi, serr := os.Stat(path); serr == nil && fi.IsDir() && anchor == "" {
					continue
				}
				bad = append(bad, fmt.Sprintf("%s: %s: no such file", f, target))
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !slices.Contains(anchors(string(page)), anchor) {
				bad = append(bad, fmt.Sprintf("%s: %s: no such heading", f, target))
			}
		}
	}
	return bad
}

func TestReadmeIsAFrontDoor(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n >= readmeMaxLines {
		t.Errorf("README.md has %d lines; keep it under %d and move the rest to docs/", n, readmeMaxLines)
	}
	linked := map[string]bool{}
	for _, m := range markdownLink.FindAllStringSubmatch(string(b), -1) {
		file, _, _ := strings.Cut(m[1], "#")
		linked[filepath.Clean(file)] = true
	}
	for _, page := range docFiles(t, root)[1:] {
		if !linked[page] {
			t.Errorf("README.md does not link %s", page)
		}
	}
}

func TestDocLinksResolve(t *testing.T) {
	root := repoRoot(t)
	for _, line := range brokenLinks(t, root, docFiles(t, root)) {
		t.Error(line)
	}
}

// docs/layout.md names every package of the tree, and nothing it names
// as a package or file is gone.
func TestLayoutNamesEveryPackage(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	packages := map[string]bool{}
	for _, f := range goFiles(t, root) {
		if dir := filepath.Dir(f); slices.Contains(layers[:len(layers)-1], topLevel(f)) {
			packages[dir] = true
		}
	}
	for pkg := range packages {
		if !strings.Contains(doc, "`"+pkg+"`") {
			t.Errorf("docs/layout.md does not name the package %s", pkg)
		}
	}
	for _, m := range regexp.MustCompile("`((?:"+strings.Join(layers, "|")+`)(?:/[\w.-]+)*)`+"`").FindAllStringSubmatch(doc, -1) {
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("docs/layout.md names %s, which is not there", m[1])
		}
	}
	floors := slices.Clone(layers[:len(layers)-1])
	slices.Reverse(floors)
	if line := "Floors, from the top: " + strings.Join(floors, " → ") + "."; !strings.Contains(doc, line+"\n") {
		t.Errorf("docs/layout.md does not give the floors as the check has them:\n%s", line)
	}
}

// The link check must see a broken link, a missing heading and a link
// out of the tree, and pass a good one and a link inside code.
func TestBrokenLinksFound(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "docs"), 0o755)
	os.WriteFile(filepath.Join(root, "docs", "a.md"), []byte("# A page\n## Set-up (as root)\n"), 0o644)
	os.WriteFile(filepath.Join(root, "README.md"), []byte(strings.Join([]string{
		"[good](docs/a.md) [heading](docs/a.md#set-up-as-root) [web](https://example.org/x)",
		"[gone](docs/b.md) [no heading](docs/a.md#nothing) [out](../x.md)",
		"`[in code](docs/c.md)`",
		"```", "[in a block](docs/d.md)", "```",
	}, "\n")), 0o644)
	got := brokenLinks(t, root, []string{"README.md", "docs/a.md"})
	want := []string{
		"README.md: docs/b.md: no such file",
		"README.md: docs/a.md#nothing: no such heading",
		"README.md: ../x.md leads out of the repository",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("brokenLinks =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
