package acl

import (
	"bytes"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzParseSecret: a token from a header, a flag or a file never panics the parser, and
// what it accepts prints back to itself.
func FuzzParseSecret(f *testing.F) {
	f.Add("berth-acl-abc123.0123456789abcdef")
	f.Add("berth-abc123.0123456789abcdef")
	f.Add("berth-acl-.")
	f.Fuzz(func(t *testing.T, s string) {
		sec, err := ParseSecret(s)
		if err != nil {
			return
		}
		again, err := ParseSecret(sec.String())
		if err != nil || again != sec {
			t.Fatalf("%q parsed to %+v, which does not round-trip: %v", s, sec, err)
		}
	})
}

// FuzzPolicy: a policy document as the server decodes it (strict YAML or JSON) never
// panics the decoder or the validation, and a valid policy decides requests without
// panicking either.
func FuzzPolicy(f *testing.F) {
	f.Add([]byte("kind: acl-policy\nmetadata: {name: dev}\nrules:\n  - {namespaces: [\"dev-*\"], kinds: [\"*\"], verbs: [read], privileges: [root]}\n"))
	f.Add([]byte(`{"kind":"acl-policy","metadata":{"name":"x"},"rules":[{"kinds":["node"],"verbs":["*"]}]}`))
	f.Add([]byte("kind: acl-policy\nrules: [{namespaces: ['[']}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Policy
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if dec.Decode(&p) != nil || p.Validate() != nil {
			return
		}
		for _, req := range []Request{{Verb: VerbRead, Kind: "process", Namespace: "dev-a"}, {Verb: VerbWrite, Kind: "secret", Namespace: "*"},
			{Verb: VerbAdmin, Kind: KindCluster}, {Verb: VerbWrite, Kind: "application", Namespace: "x", Privilege: PrivRoot}} {
			p.Allows(req)
		}
	})
}
