package bcs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/compat/v1call"
)

// BCS sent framework messages to its executors: a signal to a process, a file to write
// (local, remote), an environment variable. berth has the signal (its task groups'
// signal action); files and environment come from configmaps and secrets at start, so
// those messages are refused, saying so.

// bcsMessage is the body of BCS's message routes.
type bcsMessage struct {
	MsgType string          `json:"msgtype"`
	MsgData json.RawMessage `json:"msgdata"`
}

// bcsSignal is a signal message's data.
type bcsSignal struct {
	Signal      int    `json:"signal"`
	ProcessName string `json:"processname"`
}

// bcsSendFailure is BCS's report of a task group a message did not reach.
type bcsSendFailure struct {
	ID     string `json:"ID"`
	Status string `json:"Status"`
	Err    string `json:"Err"`
}

// readSignal reads a message body, which must be a signal.
func readSignal(r *http.Request) (url.Values, *failure) {
	var m bcsMessage
	if err := json.Unmarshal(v1call.Body(r), &m); err != nil {
		return nil, &failure{code: CodeJSONDecode, message: "the body is not a message {msgtype, msgdata}: " + err.Error()}
	}
	switch m.MsgType {
	case "signal":
	case "local", "remote", "env", "env-key", "env_remote", "secret":
		return nil, &failure{code: CodeUnknownMessage, message: fmt.Sprintf("berth does not send %q messages to executors: "+
			"give files and environment through configmaps and secrets, which instances get when they start (docs/compat.md)", m.MsgType)}
	default:
		return nil, &failure{code: CodeUnknownMessage, message: fmt.Sprintf("unknown message type %q (signal)", m.MsgType)}
	}
	var sig bcsSignal
	if err := json.Unmarshal(m.MsgData, &sig); err != nil {
		return nil, &failure{code: CodeJSONDecode, message: "msgdata is not a signal {signal, processname}: " + err.Error()}
	}
	if _, err := v4.ParseSignal(strconv.Itoa(sig.Signal)); err != nil {
		return nil, &failure{code: CodeBadRequestData, message: "msgdata.signal: " + err.Error()}
	}
	q := url.Values{"signal": {strconv.Itoa(sig.Signal)}}
	if sig.ProcessName != "" {
		q.Set("task", sig.ProcessName)
	}
	return q, nil
}

// signal sends one task group the signal of q.
func (h *Handler) signal(r *http.Request, ns, tg string, q url.Values) v1call.Answer {
	return h.v1.Call(r, http.MethodPost, v1call.Path("namespaces", ns, "taskgroups", tg, "actions", v4.ActionSignal), q, nil)
}

// taskGroupMessage sends a message to one task group.
func (h *Handler) taskGroupMessage(w http.ResponseWriter, r *http.Request) {
	q, f := readSignal(r)
	if f != nil {
		writeFailure(w, *f)
		return
	}
	h.finish(w, h.signal(r, r.PathValue("ns"), r.PathValue("tg"), q), false, nil)
}

// applicationMessage sends a message to every task group of an application; as BCS, the
// answer lists the task groups it did not reach (data null when it reached them all).
func (h *Handler) applicationMessage(plural string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, f := readSignal(r)
		if f != nil {
			writeFailure(w, *f)
			return
		}
		_, _, tgs, f := h.workloadTaskGroups(r, plural)
		if f != nil {
			writeFailure(w, *f)
			return
		}
		var failed []bcsSendFailure
		for _, tg := range tgs {
			if a := h.signal(r, tg.Metadata.Namespace, tg.Metadata.Name, q); !a.OK() {
				failed = append(failed, bcsSendFailure{ID: tg.Metadata.Name, Status: tg.Status.Phase, Err: a.Message()})
			}
		}
		if failed == nil {
			writeSuccess(w, nil, nil)
			return
		}
		writeSuccess(w, failed, nil)
	}
}
