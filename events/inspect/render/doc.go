// Package render is the look the inspection packages share: how their
// tables write a time, a card digest and an empty cell, and the frame,
// style, script and colours of their HTML pages. Package replay renders its
// timelines, card histories and re-evaluations with it (Timeline.WriteText,
// WriteJSON, WriteHTML, …), package census its fleet view (Fleet.WriteText,
// WriteJSON, WriteHTML); carddrift replay, carddrift fleet and serve's
// /fleet page only choose the format and where the bytes go.
//
// Every page is one self-contained, XHTML-compatible document made by one
// frame (Page: the document, its head with the shared style, the heading
// and the shared script, inserted as they are; the script uses neither '<'
// nor '&') around the page's own header and main, and Color gives the i-th
// colour of the palette in which card versions are told apart.
//
// Package rendertest holds the checks the page tests share: well-formed,
// self-contained XML, and headless Chromium.
package render
