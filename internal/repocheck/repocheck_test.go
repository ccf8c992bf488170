package repocheck

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root: the directory holding go.mod, above this
// package's.
func root(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// skipDir are directories never checked: dependencies, generated code, build
// and test output.
var skipDir = map[string]bool{
	".git": true, "node_modules": true, ".venv": true, "gen": true, "dist": true,
	"test-artifacts": true, "parley-data": true, "bin": true, "testdata": true, "vendor": true,
}

// walk calls fn for every file under the root, relative path with slashes,
// outside skipDir.
func walk(t *testing.T, root string, fn func(rel string)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (skipDir[d.Name()] || strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		fn(filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// docFiles are the Markdown files whose links are checked.
func docFiles(t *testing.T, root string) []string {
	files := []string{"README.md", "deploy/README.md"}
	walk(t, root, func(rel string) {
		if strings.HasPrefix(rel, "docs/") && strings.HasSuffix(rel, ".md") {
			files = append(files, rel)
		}
	})
	return files
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	inlineCode = regexp.MustCompile("`[^`]*`")
	mdLink     = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	linkText   = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// prose returns a Markdown file's lines outside fenced code blocks, each
// with its 1-based number.
func prose(t *testing.T, path string) (lines []string, nums []int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	in := false
	for n := 1; sc.Scan(); n++ {
		if fence.MatchString(sc.Text()) {
			in = !in
			continue
		}
		if !in {
			lines, nums = append(lines, sc.Text()), append(nums, n)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines, nums
}

// slug is the anchor GitHub gives a heading: lower case, markup and
// punctuation dropped, spaces as hyphens.
func slug(h string) string {
	h = linkText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors are the heading anchors of a Markdown file, duplicates numbered
// as GitHub numbers them.
func anchors(t *testing.T, path string) map[string]bool {
	lines, _ := prose(t, path)
	seen, out := map[string]int{}, map[string]bool{}
	for _, l := range lines {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestDocLinksResolve: every relative link in README.md, deploy/README.md
// and docs/ names a file or directory of the repository, and a heading of
// it where the link has a #fragment.
func TestDocLinksResolve(t *testing.T) {
	root := root(t)
	cache := map[string]map[string]bool{}
	for _, doc := range docFiles(t, root) {
		lines, nums := prose(t, filepath.Join(root, doc))
		for i, l := range lines {
			for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if scheme.MatchString(target) {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				path := filepath.Join(root, doc) // a bare #fragment is this file's
				if file != "" {
					path = filepath.Join(root, filepath.Dir(doc), filepath.FromSlash(file))
				}
				rel, err := filepath.Rel(root, path)
				if err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s:%d: link %q leaves the repository", doc, nums[i], target)
					continue
				}
				st, err := os.Stat(path)
				if err != nil {
					t.Errorf("%s:%d: link %q: no such file in the repository", doc, nums[i], target)
					continue
				}
				if frag == "" || st.IsDir() || !strings.HasSuffix(path, ".md") {
					continue
				}
				if cache[path] == nil {
					cache[path] = anchors(t, path)
				}
				if !cache[path][frag] {
					t.Errorf("%s:%d: link %q: %s has no heading #%s", doc, nums[i], target, rel, frag)
				}
			}
		}
	}
}

// missing are citations of documents that are not in the repository: the
// project's private design notes and the source texts they drew on. State
// the rule instead, and link the doc under docs/ that explains it.
var missing = []*regexp.Regexp{
	regexp.MustCompile(`\b(DESIGN|STYLE|ANCHORS|FACTS)\.md\b`),
	regexp.MustCompile(`(?i)\bseeds? ?(0\d\d|§)`),
	regexp.MustCompile(`(?i)\bshared/seeds\b`),
	regexp.MustCompile(`(?i)\bthe (scaling )?article\b`),
	regexp.MustCompile(`\((?i:seed): `),
}

var (
	// docPath is a path to a document of the repository, which must exist.
	docPath = regexp.MustCompile(`\b(?:docs|deploy)/[A-Za-z0-9_./-]*\.md\b`)
	// readmeSection names a section of README.md (the word README, a colon
	// or a comma, and the section's title), which must be one of its
	// headings.
	readmeSection = regexp.MustCompile(`\bREADME[:,] "?([A-Z][A-Za-z' -]*[A-Za-z])`)
)

// cited reports whether a file is one whose text is checked for citations.
func cited(rel string) bool {
	if base := filepath.Base(rel); base == "Makefile" || base == "Dockerfile" {
		return true
	}
	switch filepath.Ext(rel) {
	case ".go", ".proto", ".sh", ".yaml", ".yml", ".conf", ".md", ".ts", ".mjs", ".py", ".toml", ".service":
		return true
	case ".json":
		return strings.HasPrefix(rel, "deploy/")
	}
	return false
}

// TestNoCitationOfMissingDocuments scans code, scripts, build and deploy
// files and the docs for references a reader of the repository cannot
// open, and names each as file:line.
func TestNoCitationOfMissingDocuments(t *testing.T) {
	root := root(t)
	lines, _ := prose(t, filepath.Join(root, "README.md"))
	sections := map[string]bool{}
	for _, l := range lines {
		if m := heading.FindStringSubmatch(l); m != nil {
			sections[strings.ToLower(m[1])] = true
		}
	}
	n := 0
	walk(t, root, func(rel string) {
		if !cited(rel) {
			return
		}
		n++
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		// Whole-file matches, then their lines: most files match nothing.
		line := func(at int) (int, string) {
			start := strings.LastIndexByte(text[:at], '\n') + 1
			end := strings.IndexByte(text[at:], '\n')
			if end < 0 {
				end = len(text) - at
			}
			return strings.Count(text[:at], "\n") + 1, strings.TrimSpace(text[start : at+end])
		}
		for _, re := range missing {
			for _, loc := range re.FindAllStringIndex(text, -1) {
				n, l := line(loc[0])
				t.Errorf("%s:%d: cites %q, which is not in the repository: %s", rel, n, text[loc[0]:loc[1]], l)
			}
		}
		for _, loc := range docPath.FindAllStringIndex(text, -1) {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(text[loc[0]:loc[1]]))); err != nil {
				n, _ := line(loc[0])
				t.Errorf("%s:%d: cites %s, which is not in the repository", rel, n, text[loc[0]:loc[1]])
			}
		}
		for _, m := range readmeSection.FindAllStringSubmatchIndex(text, -1) {
			if title := text[m[2]:m[3]]; !sections[strings.ToLower(title)] {
				n, _ := line(m[0])
				t.Errorf("%s:%d: cites README section %q, which README.md does not have (the docs index is in README.md, the sections in docs/)", rel, n, title)
			}
		}
	})
	if n < 100 {
		t.Fatalf("scanned %d files: the walk missed the repository", n)
	}
}

// TestPackageMapIsComplete: every Go package under server/ is named in
// docs/architecture.md's package map (as `server/x/`): a new package needs
// its row.
func TestPackageMapIsComplete(t *testing.T) {
	root := root(t)
	data, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	pkgs := map[string]bool{}
	walk(t, root, func(rel string) {
		if strings.HasPrefix(rel, "server/") && strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			pkgs[filepath.ToSlash(filepath.Dir(rel))] = true
		}
	})
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages under server/: the walk missed them", len(pkgs))
	}
	for p := range pkgs {
		if !strings.Contains(doc, "`"+p+"/`") && !strings.Contains(doc, "`"+p+"`") {
			t.Errorf("docs/architecture.md's package map does not name %s: add a row", p)
		}
	}
}
