package test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The docs are part of the product: the README is a front door to the
// guides, its commands are the ones CI runs, its code compiles, and every
// link between the documents leads somewhere.

// guides are the documents the README must link: each lives beside what it
// describes.
var guides = []string{"schemas/README.md", "deployments/README.md", "test/README.md"}

// TestReadme: the README is at most 300 lines, opens with the demo and the
// test command, the test command is exactly the one .ci/run runs, and it
// links every guide.
func TestReadme(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	if n := strings.Count(readme, "\n"); n > 300 {
		t.Errorf("README.md has %d lines, want at most 300: move the detail to the guide it belongs to", n)
	}
	_, first, _ := strings.Cut(readme, "```sh\n")
	first, _, _ = strings.Cut(first, "```")
	var commands []string
	for _, line := range strings.Split(strings.TrimSpace(first), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		commands = append(commands, strings.TrimSpace(cmd))
	}
	ci := readRepoFile(t, ".ci/run")
	var ciTest string
	for _, line := range strings.Split(ci, "\n") {
		if strings.HasPrefix(line, "go test") {
			ciTest = strings.TrimSpace(line)
		}
	}
	if want := []string{"go run ./cmd/carddrift demo", ciTest}; ciTest == "" || strings.Join(commands, "\n") != strings.Join(want, "\n") {
		t.Errorf("README.md's first commands = %q, want %q (the demo, then .ci/run's test command)", commands, want)
	}
	for _, g := range guides {
		if !strings.Contains(readme, "]("+g+")") {
			t.Errorf("README.md does not link the guide %s", g)
		}
	}
}

// TestReadmeExamples builds every Go program of the README against the
// module as it is, so the integration it shows matches the current API.
// Each program is laid over a directory that does not exist (go build
// -overlay), so nothing is written into the tree.
func TestReadmeExamples(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	programs := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(readme, -1)
	if len(programs) == 0 {
		t.Fatal("README.md shows no Go program")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	overlay := map[string]map[string]string{"Replace": {}}
	var pkgs []string
	for i, p := range programs {
		src := filepath.Join(dir, fmt.Sprintf("example%d.go", i))
		if err := os.WriteFile(src, []byte(p[1]), 0o600); err != nil {
			t.Fatal(err)
		}
		pkg := fmt.Sprintf("test/readmeexample/%d", i)
		overlay["Replace"][filepath.Join(root, pkg, "main.go")] = src
		pkgs = append(pkgs, "./"+pkg)
	}
	b, err := json.Marshal(overlay)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "overlay.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, pkg := range pkgs {
		cmd := exec.Command(goBin, "build", "-overlay", filepath.Join(dir, "overlay.json"), "-o", os.DevNull, pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README.md's Go program %d does not build: %v\n%s\n%s", i+1, err, out, programs[i][1])
		}
	}
}

// TestDocLinks follows every relative link of the repository's Markdown
// files: the file must exist, and a #fragment must name a heading of it
// (GitHub's anchors: lower case, punctuation dropped, spaces as dashes).
func TestDocLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fence := regexp.MustCompile("(?s)```.*?```")
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		text := fence.ReplaceAllString(readFile(t, path), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			resolved := path
			if file != "" {
				resolved = filepath.Join(filepath.Dir(path), file)
			}
			if _, err := os.Stat(resolved); err != nil {
				t.Errorf("%s: link %s: %v", path, target, err)
				continue
			}
			if frag != "" && !headingAnchors(t, resolved)[frag] {
				t.Errorf("%s: link %s: %s has no heading #%s", path, target, resolved, frag)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// headingAnchors returns the anchors of a Markdown file's headings.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	text := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(readFile(t, path), "")
	drop := regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ +(.+)$`).FindAllStringSubmatch(text, -1) {
		out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-")] = true
	}
	return out
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	return readFile(t, filepath.Join("..", name))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
