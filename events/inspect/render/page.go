package render

import (
	_ "embed"
	"html/template"
)

// The style and the script of the replay and the fleet pages.
var (
	//go:embed page.css
	pageCSS string
	//go:embed page.js
	pageJS string
)

// CSS is the pages' style sheet, for a <style> element.
func CSS() template.CSS { return template.CSS(pageCSS) }

// JS is the pages' script, for a <script> element: the filter box, and the
// buttons and links that open and close the details.
func JS() template.JS { return template.JS(pageJS) }

// palette colours card versions, so that consecutive versions of one agent
// never look alike.
var palette = []string{
	"#8ecae6", "#ffb703", "#90be6d", "#f28482", "#b497d6",
	"#f9c74f", "#43aa8b", "#e76f51", "#a3c4f3", "#cdb4db",
}

// Color is the i-th colour of the palette of card versions (it repeats
// after ten).
func Color(i int) string { return palette[i%len(palette)] }
