package server

// mergePatch applies an RFC 7386 JSON Merge Patch to target, both as decoded by
// encoding/json into any: an object in the patch merges key by key (null removes the
// key), anything else replaces the target wholesale (arrays included). target is not
// modified; the result may share unchanged values with it.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, _ := target.(map[string]any) // a non-object target is replaced by an object
	out := make(map[string]any, len(t)+len(p))
	for k, v := range t {
		out[k] = v
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], v)
	}
	return out
}
