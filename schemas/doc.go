// Package schemas holds the JSON Schemas (draft 2020-12) of the data of every
// CloudEvent carddrift consumes or produces, and validates event data against
// them.
//
// The schemas are the public contract: one embedded file per event type and
// version, <type>.v<N>.json, with the $id
// https://carddrift.dev/schemas/<type>/v<N>.json that events carry in their
// dataschema attribute; FS serves them as they are.
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
// Schemas are compiled once, on first use, from the embedded files (the
// compiler refuses keywords it does not know) and are safe for concurrent
// use. Reader checks data while a decoder reads it (events.Decode);
// Validate checks bytes. Formats are asserted. TestDifferential and
// FuzzValidate hold Reader to a full JSON Schema validator: what it
// accepts, and the field it names first.
package schemas
