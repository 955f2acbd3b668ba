package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

// teamA may do everything but exec in team-a, and names team-new, where nothing is yet.
const teamA = `kind: acl-policy
metadata: {name: team-a}
rules:
  - namespaces: [team-a, team-new]
    kinds: ["*"]
    verbs: [read, write, logs]
`

// Several questions in one can-i are answered in order, each for the caller's token only:
// a token of one namespace learns no more about another than that it may not.
func TestCanIChecks(t *testing.T) {
	url := newTestServer(t, Config{})
	tok := tokenWithPolicy(t, url, teamA, "team-a", "")
	body := `{"checks":[
		{"verb":"scale","kind":"application","namespace":"team-a"},
		{"verb":"exec","kind":"taskgroup","namespace":"team-a"},
		{"verb":"read","kind":"application","namespace":"team-b"},
		{"verb":"read","kind":"application"},
		{"verb":"write","kind":"node","namespace":"team-a"},
		{"verb":"logs","kind":"taskgroup","namespace":"team-a"}]}`
	r := callAs(t, "", http.MethodPost, url+"/v1/acl/can-i", body, tok)
	wantStatus(t, r, http.StatusOK)
	var ans v4.CanIList
	if err := json.Unmarshal(r.body, &ans); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range ans.Checks {
		got = append(got, fmt.Sprintf("%s %s %s %v", c.Verb, c.Kind, c.Namespace, c.Allowed))
	}
	want := []string{
		"scale application team-a true", // write implies scale
		"exec taskgroup team-a false",
		"read application team-b false",
		"read application * false", // no rule for every namespace
		"write node  false",        // a cluster-wide kind has no namespace
		"logs taskgroup team-a true",
	}
	if !slices.Equal(got, want) {
		t.Errorf("answers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A bad can-i is refused naming the field, and a bulk one is bounded.
func TestCanIRefusesBadQuestions(t *testing.T) {
	url := newTestServer(t, Config{})
	tok := tokenWithPolicy(t, url, teamA, "team-a", "")
	q := `{"verb":"read","kind":"application","namespace":"team-a"}`
	cases := []struct{ name, body, field string }{
		{"no checks", `{"checks":[]}`, "checks"},
		{"too many", `{"checks":[` + strings.Repeat(q+",", maxCanIChecks) + q + `]}`, "checks"},
		{"both forms", `{"verb":"read","kind":"application","checks":[` + q + `]}`, "checks"},
		{"bad verb", `{"checks":[` + q + `,{"verb":"own","kind":"application"}]}`, "checks[1].verb"},
		{"no kind", `{"checks":[{"verb":"read"}]}`, "checks[0].kind"},
		{"a path for a namespace", `{"checks":[{"verb":"read","kind":"application","namespace":"a/b"}]}`, "checks[0].namespace"},
		{"one, bad verb", `{"verb":"own","kind":"application"}`, "verb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := callAs(t, "", http.MethodPost, url+"/v1/acl/can-i", tc.body, tok)
			wantStatus(t, r, http.StatusUnprocessableEntity)
			if e := decodeError(t, r); len(e.Details) != 1 || e.Details[0].Field != tc.field {
				t.Errorf("details %+v, want the field %s", e.Details, tc.field)
			}
		})
	}
	// The single question still answers as it did.
	r := callAs(t, "", http.MethodPost, url+"/v1/acl/can-i", q, tok)
	wantStatus(t, r, http.StatusOK)
	var one v4.CanI
	if err := json.Unmarshal(r.body, &one); err != nil || !one.Allowed {
		t.Errorf("can-i %s: %s", q, r.body)
	}
}

// The namespaces a token is shown are those it may read in: the held ones its rules
// match, and the ones they name before anything is in them; never another tenant's.
func TestNamespaceListFollowsRights(t *testing.T) {
	url := newTestServer(t, Config{})
	for _, ns := range []string{"team-a", "team-b", "other"} {
		wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", procJSON(ns, "web", 1)), http.StatusOK)
	}
	tok := tokenWithPolicy(t, url, teamA, "team-a", "")
	for _, c := range []struct {
		who, token string
		want       []string
	}{
		{"management", "", []string{"other", "team-a", "team-b"}},
		{"team-a", tok, []string{"team-a", "team-new"}},
		{"anonymous", anonymous, []string{}},
	} {
		r := callAs(t, "", http.MethodGet, url+"/v1/namespaces", "", c.token)
		wantStatus(t, r, http.StatusOK)
		var list v4.NamespaceList
		if err := json.Unmarshal(r.body, &list); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(list.Items, c.want) {
			t.Errorf("%s sees %q, want %q", c.who, list.Items, c.want)
		}
	}
}
