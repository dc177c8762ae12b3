// Package render is the look the inspection packages share: how their
// tables write a time, a card digest and an empty cell, and the style,
// script and colours of their HTML pages. Package replay renders its
// timelines, card histories and re-evaluations with it (Timeline.WriteText,
// WriteJSON, WriteHTML, …), package census its fleet view (Fleet.WriteText,
// WriteJSON, WriteHTML); carddrift replay, carddrift fleet and serve's
// /fleet page only choose the format and where the bytes go.
//
// Every page is one self-contained, XHTML-compatible document: CSS and JS
// return the page style and script to be inserted inline (html/template
// inserts them as they are; the script uses neither '<' nor '&'), and Color
// gives the i-th colour of the palette in which card versions are told
// apart.
//
// Package rendertest holds the checks the page tests share: well-formed,
// self-contained XML, and headless Chromium.
package render
