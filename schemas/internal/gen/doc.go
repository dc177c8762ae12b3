// Command gen writes enums_gen.go of package schemas: the lists of the
// contract that code and documentation repeat (the unreachable reasons,
// the signature outcomes, the posture, action and severity enums, ...)
// and the member names of every event type's data, read from the schema
// files. Run it with go generate in schemas; TestGeneratedCurrent fails
// when the file is not what it writes.
//
// Usage: gen [-o file] (default enums_gen.go; "-" for standard output).
package main
