package v4

import (
	"reflect"
	"strings"
)

// bcsIgnored lists the keys that BCS's v4 types declare (its decoder accepts them) and
// berth accepts without acting on them, by the type of the object that holds them, with
// what BCS did with each: the warning says why berth ignores it. A key that is neither
// berth's nor BCS's is still an error with a suggestion. docs/compat.md lists them all.
var bcsIgnored = map[reflect.Type]map[string]string{
	reflect.TypeFor[Workload](): {
		"updatePolicy": "BCS parsed it and never used it",
	},
}

// ignoredKey reports whether key (any case) is one of t's ignored BCS keys, or of a struct
// that t embeds, and why.
func ignoredKey(t reflect.Type, key string) (string, bool) {
	for k, why := range bcsIgnored[t] {
		if strings.EqualFold(k, key) {
			return why, true
		}
	}
	for i := range t.NumField() {
		if f := t.Field(i); f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "" {
			if why, ok := ignoredKey(f.Type, key); ok {
				return why, true
			}
		}
	}
	return "", false
}
