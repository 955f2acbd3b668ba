// Package redact hides the credentials that BCS's documents may carry written out (an
// image pull password, a package's or a remote file's password, a password in a URL)
// where berth answers a stored document to whoever may read its object: BCS answered
// them masked too. Only the answer changes: what was applied keeps them (docs/security.md).
package redact

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Mask replaces a credential.
const Mask = "******"

// credentialKeys are the keys whose string values are credentials: BCS's container's
// imagePullPasswd, a configmap item's remotePasswd and a process URI's pwd. BCS's
// decoder matched keys in any case, so they are matched in any case.
var credentialKeys = []string{"imagePullPasswd", "remotePasswd", "pwd"}

// userinfo finds the password of a URL's user info in any text (a URI, a command line).
// As Go's url.Parse (and curl) read one, the user info runs to the authority's last "@"
// and the user to its first ":": a user or a password with an "@" in it (an e-mail
// address, "p@ss") is still a user or a password.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/?#\s:]*):([^/?#\s]*)@`)

// String is s with the passwords of the URLs in it masked; key is the key whose value
// s is ("" in an array), and a credential key's value is masked whole.
func String(key, s string) string {
	if s == "" {
		return s
	}
	for _, k := range credentialKeys {
		if strings.EqualFold(key, k) {
			return Mask
		}
	}
	return userinfo.ReplaceAllStringFunc(s, func(m string) string {
		sub := userinfo.FindStringSubmatch(m)
		if sub[2] == "" {
			return m
		}
		return sub[1] + ":" + Mask + "@"
	})
}

// Document is a stored document (JSON or YAML) with its credentials masked. A document
// without any is returned as it is, byte for byte; a JSON one keeps its bytes but for the
// masked strings.
func Document(data []byte) []byte {
	if json.Valid(data) {
		return jsonDoc(data)
	}
	return yamlDoc(data)
}

// frame is one JSON object or array being walked.
type frame struct {
	object, wantKey bool
	key             string
}

// jsonDoc walks the tokens of a valid JSON document, replacing the string values to mask
// in place.
func jsonDoc(data []byte) []byte {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var (
		stack     []*frame
		out       []byte
		copied    int   // data[:copied] is in out
		prev      int64 // the end of the previous token
		rewritten bool
	)
	// value says that a value of the top frame was read: an object wants a key next.
	value := func() (key string) {
		if len(stack) == 0 {
			return ""
		}
		top := stack[len(stack)-1]
		if top.object {
			top.wantKey = true
			return top.key
		}
		return ""
	}
	for {
		tok, err := d.Token()
		if err != nil {
			break // the end: data is valid JSON
		}
		end := d.InputOffset()
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				value()
				stack = append(stack, &frame{object: t == '{', wantKey: t == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				stack[n-1].key, stack[n-1].wantKey = t, false
				break
			}
			if masked := String(value(), t); masked != t {
				start := int(prev) + bytes.IndexByte(data[prev:end], '"')
				q, _ := json.Marshal(masked)
				out = append(append(out, data[copied:start]...), q...)
				copied, rewritten = int(end), true
			}
		default:
			value()
		}
		prev = end
	}
	if !rewritten {
		return data
	}
	return append(out, data[copied:]...)
}

// yamlDoc masks a YAML document's credentials; one that has any is written again (its
// comments and order kept, its layout yaml's).
func yamlDoc(data []byte) []byte {
	var docs []*yaml.Node
	d := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := d.Decode(&n); err != nil {
			break
		}
		docs = append(docs, &n)
	}
	changed := false
	for _, n := range docs {
		changed = maskNode(n, "") || changed
	}
	if !changed {
		return data
	}
	var buf bytes.Buffer
	e := yaml.NewEncoder(&buf)
	e.SetIndent(2)
	for _, n := range docs {
		if err := e.Encode(n); err != nil {
			return []byte("# berth: this definition holds credentials and cannot be shown masked\n")
		}
	}
	e.Close()
	return buf.Bytes()
}

func maskNode(n *yaml.Node, key string) bool {
	changed := false
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			changed = maskNode(c, "") || changed
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			changed = maskNode(n.Content[i+1], n.Content[i].Value) || changed
		}
	case yaml.AliasNode:
		// A credential key's value may be an alias of a scalar anchored elsewhere (under
		// a key berth drops, say): the anchored value is masked, where it is and here.
		// Only a scalar is followed: an alias of a collection may be its own ancestor.
		if n.Alias != nil && n.Alias.Kind == yaml.ScalarNode {
			changed = maskNode(n.Alias, key)
		}
	case yaml.ScalarNode:
		// A credential key's value is masked whatever it reads as (pwd: 1234).
		if m := String(key, n.Value); m != n.Value && (n.Tag == "!!str" || m == Mask) {
			n.Value, n.Tag, n.Style, changed = m, "!!str", yaml.DoubleQuotedStyle, true
		}
	}
	return changed
}
