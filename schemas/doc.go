// Package schemas holds the JSON Schemas (draft 2020-12) of the data of every
// CloudEvent carddrift consumes or produces, and validates event data against
// them.
//
// The schemas are the public contract: one file per event type and version,
// named <type>.v<N>.json (for example a2a.task.submitted.v1.json), with the
// $id https://carddrift.dev/schemas/<type>/v<N>.json. Every event carddrift
// encodes carries that $id in its CloudEvents dataschema attribute. The files
// are embedded with go:embed, so the binary and the documentation cannot
// disagree; FS serves them as they are.
//
// Inbound (published by A2A clients): a2a.task.submitted, a2a.task.request,
// a2a.task.status, a2a.task.artifact, a2a.task.error. Outbound (published by
// carddrift): card.drift, card.pinned, card.observed, card.unreachable.
//
// Use:
//
//	if err := schemas.Validate("a2a.task.request", data); err != nil {
//		var verr *schemas.ValidationError
//		if errors.As(err, &verr) {
//			log.Printf("field %s: %s", verr.Field, verr.Reason)
//		}
//	}
//
// Schemas are compiled once, on first use, from the embedded files
// themselves (compile.go knows the keywords they use and refuses others),
// and are safe for concurrent use. Reader checks data against a schema
// while a decoder reads it (events.Decode reads each event's data into its
// Go type and validates it in that one pass); Validate is the same check
// for data held as bytes. Formats are asserted (uri, date-time); nothing
// is loaded from the network or the file system. The files are the one
// truth: TestDifferential and FuzzValidate hold Reader to a full JSON
// Schema validator (github.com/santhosh-tekuri/jsonschema/v6, used by the
// tests only): what it accepts, and the field it names first.
package schemas
