package schema

import (
	"testing"

	"fleetgen.dev/fleetgen/pkg/problem"
)

func TestErrorCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ msg, want string }{
		{`metadata name is required: want a DNS-1123 label`, problem.CodeRequired},
		{`source kind is required: want git or oci`, problem.CodeRequired},
		{`no age recipients: want at least one age1… public key`, problem.CodeRequired},
		{`want exactly one of {file: PATH} or {value: …}`, problem.CodeRequired},
		{`unsupported value "pull": want agent, manager, capi or verrazzano`, problem.CodeUnsupported},
		{`unsupported apiVersion "v2": want fleetgen.dev/v1alpha1`, problem.CodeUnsupported},
		{`invalid name "Contoso_Fleet": want a DNS-1123 label`, problem.CodeInvalid},
		{`invalid duration "1d": want a number and unit ms, s, m or h`, problem.CodeDuration},
		{`token TTL "0s" is not positive: want a duration > 0`, problem.CodeDuration},
		{`duplicate cluster name "a" (also spec.clusters[0]): want unique names`, problem.CodeDuplicate},
		{`duplicate key "a" (first at line 3): want each key once`, problem.CodeDuplicateKey},
		{`unknown field "layuot" (did you mean "layout"?): want one of host`, problem.CodeUnknownField},
		{`unknown layer "infra": want one of apps`, problem.CodeUnknownRef},
		{`dependency cycle a -> b -> a: want dependsOn to form no cycle`, problem.CodeCycle},
		{`layer "a" depends on itself: want other layer names`, problem.CodeCycle},
		{`kubeconfig applies only to mode manager, not capi: remove it`, problem.CodeNotApplicable},
		{`value is not accepted here: want {file: PATH} or {env: VAR}`, problem.CodeNotApplicable},
		{`cannot read "x.pem": no such file or directory: want a readable file`, problem.CodeUnreadable},
		{`environment variable FLEETGEN_KUBECONFIG_X is not set or empty: want it`, problem.CodeUnsetEnv},
		{`cluster "a" has no label "env" for ${env}, and layer "x" is selected for it`, problem.CodeMissingLabel},
		{`file is larger than 16777216 bytes: want a fleet.yaml`, problem.CodeTooLarge},
		{`something new a later check says`, problem.CodeOther},
	} {
		if got := (&problem.FieldError{Msg: tc.msg}).ErrorCode(); got != tc.want {
			t.Errorf("ErrorCode(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
	if got := (&problem.FieldError{Msg: "unknown layer x", Code: problem.CodeYAMLSyntax}).ErrorCode(); got != problem.CodeYAMLSyntax {
		t.Errorf("an explicit Code: got %q", got)
	}
}
