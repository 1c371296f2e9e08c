package secrets

// Conceal reports whether a report (the file diff of `render --check` and
// `diff`) must not show data's content: some document of it is a Secret,
// also inside a List, in whatever YAML spelling ("Secret", 'Secret', a tag,
// an escape, flow style, JSON), or a document that may spell one does not
// parse, so nobody can tell. It decides by parsing, as Plaintext does, never
// by matching text; data that no YAML reading can make a Secret (see
// mayHoldSecret) is not parsed.
func Conceal(data []byte) bool {
	if !mayHoldSecret(data) {
		return false
	}
	objs, err := manifests(data)
	if err != nil {
		return true
	}
	for _, o := range objs {
		if k, _ := o["kind"].(string); k == "Secret" {
			return true
		}
	}
	return false
}
