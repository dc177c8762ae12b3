// Package wait is the context-aware sleep of the packages under events/:
// retry backoffs and paced traffic.
package wait
