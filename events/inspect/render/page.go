package render

import (
	_ "embed"
	"html/template"
)

// The frame, the style and the script of the replay and the fleet pages.
var (
	//go:embed page.html.tmpl
	frameText string
	//go:embed page.css
	pageCSS string
	//go:embed page.js
	pageJS string
)

// Frame is what the frame of a page shows around the page's own parts:
// embed it in the page's view.
type Frame struct {
	// Title is the document's title and the page's heading.
	Title string
	// Refresh, in seconds, makes the page reload itself that often (serve's
	// /fleet); 0 never.
	Refresh int
	// Style is the page's own style, after the shared one (page.css).
	Style template.CSS
}

// Page returns the template of a page: the frame (page.html.tmpl: the
// document, its head with the shared style, the heading and the script —
// the filter box, and the buttons and links that open and close the
// details) around the "header" (below the heading) and "main" templates
// that text defines with funcs. Execute it with a view that embeds Frame.
// It panics if text does not parse, as template.Must does.
func Page(name, text string, funcs template.FuncMap) *template.Template {
	t := template.New(name).Funcs(template.FuncMap{
		"pageCSS": func() template.CSS { return template.CSS(pageCSS) },
		"pageJS":  func() template.JS { return template.JS(pageJS) },
	}).Funcs(funcs)
	return template.Must(template.Must(t.Parse(frameText)).Parse(text))
}

// palette colours card versions, so that consecutive versions of one agent
// never look alike.
var palette = []string{
	"#8ecae6", "#ffb703", "#90be6d", "#f28482", "#b497d6",
	"#f9c74f", "#43aa8b", "#e76f51", "#a3c4f3", "#cdb4db",
}

// Color is the i-th colour of the palette of card versions (it repeats
// after ten).
func Color(i int) string { return palette[i%len(palette)] }
