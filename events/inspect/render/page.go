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

// Frame is what the frame shows around a page's own parts: embed it in the
// page's view. Refresh, in seconds, reloads the page (0: never); Style
// follows page.css.
type Frame struct {
	Title   string
	Refresh int
	Style   template.CSS
}

// Page returns the template of a page: the frame (page.html.tmpl) around
// the "header" and "main" templates that text defines with funcs. Execute
// it with a view that embeds Frame. It panics if text does not parse.
func Page(name, text string, funcs template.FuncMap) *template.Template {
	t := template.New(name).Funcs(template.FuncMap{
		"pageCSS": func() template.CSS { return template.CSS(pageCSS) },
		"pageJS":  func() template.JS { return template.JS(pageJS) },
	}).Funcs(funcs)
	return template.Must(template.Must(t.Parse(frameText)).Parse(text))
}

var palette = []string{
	"#8ecae6", "#ffb703", "#90be6d", "#f28482", "#b497d6",
	"#f9c74f", "#43aa8b", "#e76f51", "#a3c4f3", "#cdb4db",
}

// Color is the i-th colour of the palette of card versions (it repeats
// after ten).
func Color(i int) string { return palette[i%len(palette)] }
