package schema

// Validate checks a defaulted Fleet against every rule of SPEC §1 and returns
// Errors listing every problem in document order, or nil.
//
// SKELETON: pkg/schema owner implements.
func Validate(f *Fleet) error {
	return nil
}
