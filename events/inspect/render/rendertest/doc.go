// Package rendertest checks the inspection renderers in tests: CheckPage
// and PageText read a page as strict XML, RenderHostile and
// RenderInChromium open it in headless Chromium, Golden and GoldenPage
// compare a rendering with a testdata file, and FailingWriter checks that a
// renderer returns its writer's error.
package rendertest
