package v4

import (
	"encoding/base64"
	"strings"
)

// readDataText reads the content of a secret's item, or of a configmap's file item, that
// is not base64 as the text it is: BCS stored such an item as given, without a check, and
// its executor then failed to decode it at every launch of a task that used it (BCS's
// own templates ship {{PLACEHOLDER}} contents). berth keeps the text, base64-encoded, so
// the item holds exactly the characters written, and says so; strict validation refuses
// it. The warning never repeats the content: it may be a secret.
func readDataText(obj Object, d *decoder) {
	asText := func(path string, content *string) {
		if _, err := base64.StdEncoding.DecodeString(*content); err != nil {
			d.warn(path, "is not base64 (%v): BCS stored it as given and failed to decode it at every launch; berth keeps its text as the value", err)
			*content = base64.StdEncoding.EncodeToString([]byte(*content))
		}
	}
	switch o := obj.(type) {
	case *Secret:
		for _, k := range sortedStringKeys(o.Datas) {
			d := o.Datas[k]
			asText(joinKey("datas", k)+".content", &d.Content)
			o.Datas[k] = d
		}
	case *ConfigMap:
		for _, k := range sortedStringKeys(o.Datas) {
			if d := o.Datas[k]; strings.EqualFold(d.Type, "file") {
				asText(joinKey("datas", k)+".content", &d.Content)
				o.Datas[k] = d
			}
		}
	}
}
