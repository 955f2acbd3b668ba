package deployd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sort"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// deployd's callbacks are notify objects in Namespace, one per URL, subscribed to every
// event of every namespace. berth's message is its own (docs/notify.md), with retries.

// notifyName names a callback's notify object after its URL.
func notifyName(callback string) string {
	sum := sha256.Sum256([]byte(callback))
	return "callback-" + hex.EncodeToString(sum[:6])
}

func (h *Handler) getNotifies(w http.ResponseWriter, r *http.Request) {
	items, a := v1call.List[*v4.Notify](h.v1, r, v1call.Path("namespaces", Namespace, "notifies"))
	if a != nil {
		writeAnswerError(w, *a)
		return
	}
	var urls []string
	for _, n := range items {
		if n.Metadata.Name == notifyName(n.Spec.URL) {
			urls = append(urls, n.Spec.URL)
		}
	}
	if len(urls) == 0 {
		writeError(w, http.StatusNotFound, "no notify callback")
		return
	}
	sort.Strings(urls)
	writeJSON(w, http.StatusOK, urls)
}

func (h *Handler) addNotify(w http.ResponseWriter, r *http.Request) {
	callback := r.URL.Query().Get("callback")
	if callback == "" {
		writeError(w, http.StatusBadRequest, "query parameter callback is required (the URL to POST to)")
		return
	}
	n := &v4.Notify{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindNotify},
		Metadata: v4.ObjectMeta{Name: notifyName(callback), Namespace: Namespace},
		Spec:     v4.NotifySpec{URL: callback, Namespaces: []string{"*"}}}
	body, _ := json.Marshal(n)
	a := h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", Namespace, "notifies"), nil, body)
	if !a.OK() {
		writeAnswerError(w, a)
		return
	}
	writeAccepted(w, "notify callback added", "/api/notifies", a.Warnings)
}

func (h *Handler) removeNotify(w http.ResponseWriter, r *http.Request) {
	callback := r.URL.Query().Get("callback")
	if callback == "" {
		writeError(w, http.StatusBadRequest, "query parameter callback is required")
		return
	}
	a := h.v1.Call(r, http.MethodDelete, v1call.Path("namespaces", Namespace, "notifies", notifyName(callback)), nil, nil)
	if !a.OK() {
		writeAnswerError(w, a)
		return
	}
	writeAccepted(w, "notify callback removed", "/api/notifies", nil)
}
