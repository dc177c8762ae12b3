package rendertest

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// CheckPage parses the HTML page in the file path as strict XML and checks
// it is one self-contained document (no external asset or link) with at
// least minSVG SVG images, marks with tooltips and expandable details.
func CheckPage(t testing.TB, path string, minSVG int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, filepath.Base(path), b)
	for _, ref := range p.external {
		t.Errorf("%s: %s: external asset or link", filepath.Base(path), ref)
	}
	if c := p.elements; c["html"] != 1 || c["style"] != 1 || c["link"] != 0 || c["svg"] < minSVG || c["details"] == 0 || p.titled == 0 {
		t.Errorf("%s: elements %v, %d tooltips", filepath.Base(path), c, p.titled)
	}
}

// PageText parses a page as strict XML and returns its character data
// (tooltips and attribute values included) and the count of every element
// name.
func PageText(t testing.TB, page []byte) (string, map[string]int) {
	t.Helper()
	p := parse(t, "the page", page)
	return p.text, p.elements
}

type parsed struct {
	text     string
	elements map[string]int
	titled   int      // titles of a g or a rect: tooltips
	external []string // elements with a src, or an href not to the page
}

func parse(t testing.TB, name string, page []byte) parsed {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(page))
	dec.Strict = true
	p := parsed{elements: map[string]int{}}
	var text strings.Builder
	var stack []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed: %v", name, err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			p.elements[el.Name.Local]++
			if n := len(stack); el.Name.Local == "title" && n > 0 && (stack[n-1] == "g" || stack[n-1] == "rect") {
				p.titled++
			}
			for _, a := range el.Attr {
				text.WriteString(a.Value + "\n")
				if a.Name.Local == "src" || (a.Name.Local == "href" && !strings.HasPrefix(a.Value, "#")) {
					p.external = append(p.external, fmt.Sprintf("<%s %s=%q>", el.Name.Local, a.Name.Local, a.Value))
				}
			}
			stack = append(stack, el.Name.Local)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			text.Write(el)
		}
	}
	p.text = text.String()
	return p
}

// RenderInChromium takes a screenshot of the page (a file) with headless
// Chromium and checks it has the right size, many colours, and abort-red.
func RenderInChromium(t testing.TB, page string) {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "page.png")
	chromium(t, page, "--screenshot="+shot, "--window-size=1400,900")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	bounds := img.Bounds()
	if bounds.Dx() != 1400 || bounds.Dy() != 900 {
		t.Errorf("screenshot is %v, want 1400x900", bounds)
	}
	colors := map[[3]uint32]bool{}
	red := 0
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			c := [3]uint32{r >> 8, g >> 8, b >> 8}
			colors[c] = true
			if near(c, [3]uint32{0xd6, 0x27, 0x28}) {
				red++
			}
		}
	}
	if len(colors) < 50 {
		t.Errorf("screenshot has %d colours: the page did not render", len(colors))
	}
	if red < 10 {
		t.Errorf("screenshot has %d abort-red pixels, want the abort marks", red)
	}
}

func near(a, b [3]uint32) bool {
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < -12 || d > 12 {
			return false
		}
	}
	return true
}

// HostileName is the name of a card that tries to break out of a page: if
// it ran, it would rename the page. RenderHostile looks for it.
const HostileName = `<script>document.title='owned'</script>`

// RenderHostile opens the page, which shows a card named HostileName, in
// headless Chromium: the title must stay "carddrift " + title, the name
// must show as text, and the page must render (RenderInChromium).
func RenderHostile(t testing.TB, page, title string) {
	t.Helper()
	dom := chromium(t, page, "--dump-dom")
	if !strings.Contains(string(dom), "<title>carddrift "+title+"</title>") || strings.Contains(string(dom), "owned</title>") ||
		!strings.Contains(string(dom), "&lt;script&gt;document.title='owned'&lt;/script&gt;") {
		t.Errorf("in the browser the card's name ran or vanished:\n%s", dom)
	}
	RenderInChromium(t, page)
}

// chromium runs headless Chromium on the page with args and returns its
// stdout, skipping the test where Chromium is not installed.
func chromium(t testing.TB, page string, args ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (Debian package chromium): the headless render check is skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}, args...)
	out, err := exec.CommandContext(ctx, bin, append(args, "file://"+page)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("chromium %v: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatalf("chromium %v: %v", args, err)
	}
	return out
}

// Golden compares got with the file path byte for byte and reports the
// first line that differs. With CARDDRIFT_UPDATE_GOLDEN=1 it writes got to
// path instead (review the diff: it is what users see).
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if os.Getenv("CARDDRIFT_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (CARDDRIFT_UPDATE_GOLDEN=1 writes it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	line := func(ls []string) string {
		if i < len(ls) {
			return ls[i]
		}
		return ""
	}
	t.Errorf("%s: line %d differs (%d lines, want %d):\n got: %q\nwant: %q", filepath.Base(path), i+1, len(g), len(w), line(g), line(w))
}

// GoldenPage is Golden for an HTML page's own part, its body up to the
// script: the frame is package render's and is checked there.
func GoldenPage(t testing.TB, path string, page []byte) {
	t.Helper()
	body, script := bytes.Index(page, []byte("<body>")), bytes.LastIndex(page, []byte("<script>"))
	if body < 0 || script < body {
		t.Fatalf("%s: the page has no <body> followed by its <script>", filepath.Base(path))
	}
	Golden(t, path, page[body:script])
}

// ErrWrite is the error of FailingWriter's every Write.
var ErrWrite = errors.New("rendertest: the writer failed")

// FailingWriter is an io.Writer whose every Write fails with ErrWrite.
type FailingWriter struct{}

// Write returns 0 and ErrWrite.
func (FailingWriter) Write([]byte) (int, error) { return 0, ErrWrite }
