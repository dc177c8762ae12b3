// Package render is the look the inspection packages share (replay's
// timelines, card histories and re-evaluations; census's fleet view): how
// their tables write a time, a card digest and an empty cell, and Page, the
// frame of their HTML pages (one self-contained, XHTML-compatible document:
// the shared style and script around the page's own header and main), with
// Color, the palette in which card versions are told apart.
//
// Package rendertest holds the checks the page tests share.
package render
