package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/carddrift/carddrift/events/inspect/render/rendertest"
)

// TestPageFrame: the frame every page shares is one XHTML-compatible
// document around the page's own header and main, with the shared style
// then the page's, the shared script, the title escaped, and a refresh
// only when asked for. The pages' golden files hold only their own part
// (rendertest.GoldenPage); this is where the frame is checked.
func TestPageFrame(t *testing.T) {
	page := Page("test", `{{define "header"}}<p>{{.Text}}</p>
{{end}}{{define "main"}}<section>{{.Text}}</section>
{{end}}`, nil)
	type view struct {
		Frame
		Text string
	}
	for _, refresh := range []int{0, 10} {
		var b bytes.Buffer
		if err := page.Execute(&b, view{Frame: Frame{Title: "t <x>", Refresh: refresh, Style: ".own{}"}, Text: "a & b"}); err != nil {
			t.Fatal(err)
		}
		got := b.String()
		for _, want := range []string{
			"<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n",
			"<title>t &lt;x&gt;</title>\n<style>\n" + pageCSS + ".own{}</style>\n</head>\n",
			"<body>\n<header>\n<h1>t &lt;x&gt;</h1>\n<p>a &amp; b</p>\n</header>\n<main>\n<section>a &amp; b</section>\n</main>\n",
			"<script>\n" + pageJS + "</script>\n</body>\n</html>\n",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("refresh %d: the page lacks %q:\n%s", refresh, want, got)
			}
		}
		if has := strings.Contains(got, `<meta http-equiv="refresh" content="10"/>`); has != (refresh > 0) {
			t.Errorf("refresh %d: refresh meta element %v", refresh, has)
		}
		if _, elements := rendertest.PageText(t, b.Bytes()); elements["script"] != 1 || elements["style"] != 1 || elements["html"] != 1 {
			t.Errorf("refresh %d: elements %v, want one document, style and script", refresh, elements)
		}
	}
	// The script is inserted as it is: it must need no escaping in HTML nor
	// in XML.
	if strings.ContainsAny(pageJS, "<&") {
		t.Error("page.js uses '<' or '&'")
	}
}
