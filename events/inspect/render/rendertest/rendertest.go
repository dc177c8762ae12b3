package rendertest

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
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
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	count := map[string]int{}
	var stack []string
	titled := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed: %v", filepath.Base(path), err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			name := el.Name.Local
			count[name]++
			if name == "title" && len(stack) > 0 && (stack[len(stack)-1] == "g" || stack[len(stack)-1] == "rect") {
				titled++
			}
			for _, a := range el.Attr {
				switch {
				case a.Name.Local == "src":
					t.Errorf("%s: <%s src=%q>: external asset", filepath.Base(path), name, a.Value)
				case a.Name.Local == "href" && !strings.HasPrefix(a.Value, "#"):
					t.Errorf("%s: <%s href=%q>: external link", filepath.Base(path), name, a.Value)
				}
			}
			stack = append(stack, name)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	if count["html"] != 1 || count["style"] != 1 || count["link"] != 0 || count["svg"] < minSVG || count["details"] == 0 || titled == 0 {
		t.Errorf("%s: elements %v, %d tooltips", filepath.Base(path), count, titled)
	}
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

// PageText parses a page as strict XML and returns its character data
// (tooltips and attribute values included), the number of script elements
// and the count of every element name.
func PageText(t testing.TB, page []byte) (string, int, map[string]int) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(page))
	dec.Strict = true
	var text strings.Builder
	elements := map[string]int{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			elements[tok.Name.Local]++
			for _, a := range tok.Attr {
				text.WriteString(a.Value + "\n")
			}
		case xml.CharData:
			text.Write(tok)
		}
	}
	return text.String(), elements["script"], elements
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
