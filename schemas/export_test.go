package schemas

// ValidateGeneral validates v with the JSON Schema validator only: the
// oracle the compiled checks are held to.
func (s *Schema) ValidateGeneral(v any) error { return s.validateGeneral(v) }

// CheckCompiled applies the schema's compiled checks to v: has is false
// for a schema without them; otherwise ok says whether v conforms and
// field names the first violating field when it does not.
func (s *Schema) CheckCompiled(v any) (field string, ok, has bool) {
	if s.fast == nil {
		return "", false, false
	}
	field, ok = checkCompiled(s.fast, v)
	return field, ok, true
}
