package main

import (
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCommandDocs holds the commands' docs to the CLI: cmd/carddrift/README.md
// has a section "## `carddrift <name>`" for every command and none for a
// command that does not exist, and every flag it names (in a section, in a
// row of the command table, or after a command in a code span or a code
// line) is a flag of the command it is written for; so is every flag the
// operator's guide names in its section on running serve.
func TestCommandDocs(t *testing.T) {
	flags := listedFlags(t)
	doc := readDoc(t, "README.md")
	documented := map[string]bool{}
	for name, text := range sections(doc, "## `carddrift ") {
		documented[name] = true
		if flags[name] == nil {
			t.Errorf("README.md: a section for %q, which is no command", name)
			continue
		}
		checkDocFlags(t, "README.md ("+name+")", name, text, flags)
	}
	for name := range flags {
		if !documented[name] {
			t.Errorf("README.md has no section \"## `carddrift %s`\"", name)
		}
	}
	preamble, _, _ := strings.Cut(doc, "\n## ")
	checkDocFlags(t, "README.md (command table)", "", preamble, flags)

	const guide = "../../deployments/README.md"
	serve, ok := sections(readDoc(t, guide), "## Running `carddrift ")["serve"]
	if !ok {
		t.Fatalf("%s has no section \"## Running `carddrift serve`\"", guide)
	}
	checkDocFlags(t, guide, "serve", serve, flags)
}

// listedFlags returns each command's flag names, as its -h lists them.
func listedFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	files, err := fs.Glob(helpFiles, "help/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("help files: %v, %v", files, err)
	}
	listed := regexp.MustCompile(`(?m)^\s+-([a-z0-9][a-z0-9-]*)`)
	out := map[string]map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".txt")
		_, _, usage := runCLI(t, "", name, "-h")
		_, list, ok := strings.Cut(usage, "\nFLAGS\n")
		if !ok {
			t.Fatalf("carddrift %s -h lists no FLAGS:\n%s", name, usage)
		}
		out[name] = map[string]bool{}
		for _, m := range listed.FindAllStringSubmatch(list, -1) {
			out[name][m[1]] = true
		}
	}
	return out
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sections returns the text of each section whose heading starts with
// prefix, by the word that follows the prefix, up to the next heading of
// the same level.
func sections(doc, prefix string) map[string]string {
	level := prefix[:strings.Index(prefix, " ")+1]
	out := map[string]string{}
	for _, part := range strings.Split(doc, "\n"+level)[1:] {
		rest, ok := strings.CutPrefix(level+part, prefix)
		if !ok {
			continue
		}
		name := strings.FieldsFunc(rest, func(r rune) bool { return r == '`' || r == ' ' || r == '\n' })[0]
		out[name] = part
	}
	return out
}

var (
	codeSpan = regexp.MustCompile("`[^`]+`")
	comment  = regexp.MustCompile(`(?s)<!--.*?-->`)
	docFlag  = regexp.MustCompile(`(?:^|[\s(\[` + "`" + `])--([a-z][a-z0-9-]*[a-z0-9])\b(-?)`)
)

// checkDocFlags reports every flag text names that the command it is
// written for does not have. The command is the one a code line or span
// starts with (carddrift X, or X, for a command X), else the one of the
// table row the span is in (| `carddrift X` |), else cmd; code lines of
// other programs (nats, curl, node) are skipped, and a flag written as a
// pattern (--max-bytes-*) or in an HTML comment (a place left for text to
// come) is not checked.
func checkDocFlags(t *testing.T, where, cmd, text string, flags map[string]map[string]bool) {
	t.Helper()
	text = comment.ReplaceAllString(text, "")
	check := func(unit, owner string) {
		if owner == "" {
			return
		}
		for _, m := range docFlag.FindAllStringSubmatch(unit, -1) {
			if m[2] == "" && !flags[owner][m[1]] {
				t.Errorf("%s: --%s is not a flag of carddrift %s (in %q)", where, m[1], owner, unit)
			}
		}
	}
	command := func(unit string) (string, bool) {
		fields := strings.Fields(strings.Trim(unit, "`"))
		fields = slices.DeleteFunc(fields, func(f string) bool { return f == "$" })
		if len(fields) > 2 && fields[0] == "go" && fields[1] == "run" && fields[2] == "./cmd/carddrift" {
			fields = fields[2:]
		}
		if len(fields) > 1 && (fields[0] == "carddrift" || fields[0] == "./cmd/carddrift") && flags[fields[1]] != nil {
			return fields[1], true
		}
		if len(fields) > 0 && flags[fields[0]] != nil {
			return fields[0], true
		}
		return "", false
	}
	prose := func(para, owner string) {
		for _, span := range codeSpan.FindAllString(para, -1) {
			if spanOwner, ok := command(span); ok {
				check(span, spanOwner)
			} else {
				check(span, owner)
			}
		}
	}
	var para []string
	flush := func() {
		prose(strings.Join(para, "\n"), cmd)
		para = para[:0]
	}
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			flush()
			inCode = !inCode
		case inCode:
			if owner, ok := command(line); ok {
				check(line, owner)
			}
		case strings.HasPrefix(line, "|"):
			owner := cmd
			if row, ok := strings.CutPrefix(line, "| `"); ok {
				if rowOwner, ok := command(row); ok {
					owner = rowOwner
				}
			}
			prose(line, owner)
		case strings.TrimSpace(line) == "":
			flush()
		default:
			para = append(para, line)
		}
	}
	flush()
}
