package schema

import "testing"

func TestErrorCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ msg, want string }{
		{`metadata name is required: want a DNS-1123 label`, CodeRequired},
		{`source kind is required: want git or oci`, CodeRequired},
		{`no age recipients: want at least one age1… public key`, CodeRequired},
		{`want exactly one of {file: PATH} or {value: …}`, CodeRequired},
		{`unsupported value "pull": want agent, manager, capi or verrazzano`, CodeUnsupported},
		{`unsupported apiVersion "v2": want fleetgen.dev/v1alpha1`, CodeUnsupported},
		{`invalid name "Contoso_Fleet": want a DNS-1123 label`, CodeInvalid},
		{`invalid duration "1d": want a number and unit ms, s, m or h`, CodeDuration},
		{`token TTL "0s" is not positive: want a duration > 0`, CodeDuration},
		{`duplicate cluster name "a" (also spec.clusters[0]): want unique names`, CodeDuplicate},
		{`duplicate key "a" (first at line 3): want each key once`, CodeDuplicateKey},
		{`unknown field "layuot" (did you mean "layout"?): want one of host`, CodeUnknownField},
		{`unknown layer "infra": want one of apps`, CodeUnknownRef},
		{`dependency cycle a -> b -> a: want dependsOn to form no cycle`, CodeCycle},
		{`layer "a" depends on itself: want other layer names`, CodeCycle},
		{`kubeconfig applies only to mode manager, not capi: remove it`, CodeNotApplicable},
		{`value is not accepted here: want {file: PATH} or {env: VAR}`, CodeNotApplicable},
		{`cannot read "x.pem": no such file or directory: want a readable file`, CodeUnreadable},
		{`environment variable FLEETGEN_KUBECONFIG_X is not set or empty: want it`, CodeUnsetEnv},
		{`cluster "a" has no label "env" for ${env}, and layer "x" is selected for it`, CodeMissingLabel},
		{`file is larger than 16777216 bytes: want a fleet.yaml`, CodeTooLarge},
		{`something new a later check says`, CodeOther},
	} {
		if got := (&FieldError{Msg: tc.msg}).ErrorCode(); got != tc.want {
			t.Errorf("ErrorCode(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
	if got := (&FieldError{Msg: "unknown layer x", Code: CodeYAMLSyntax}).ErrorCode(); got != CodeYAMLSyntax {
		t.Errorf("an explicit Code: got %q", got)
	}
}
