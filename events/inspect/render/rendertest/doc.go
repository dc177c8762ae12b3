// Package rendertest checks the inspection renderers (package replay's and
// package census's Write* methods) in tests: CheckPage reads a page as
// strict XML and requires one self-contained document, PageText returns
// what a reader sees of it, and RenderHostile and RenderInChromium open it
// in headless Chromium (skipping the test where Chromium is not
// installed); Golden compares a rendering with a testdata file (GoldenPage
// what of a page is the page's own, not the shared frame), and
// FailingWriter checks that a renderer returns its writer's error.
// carddrift's command tests use the page checks on the pages the commands
// write.
package rendertest
