package redact

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, c := range []struct{ key, in, want string }{
		{"imagePullPasswd", "hunter2", Mask},
		{"IMAGEPULLPASSWD", "hunter2", Mask},
		{"pwd", "x", Mask},
		{"remotePasswd", "x", Mask},
		{"pwd", "", ""},
		{"imagePullUser", "bob", "bob"},
		{"value", "https://bob:hunter2@repo.example/pkg.tgz", "https://bob:" + Mask + "@repo.example/pkg.tgz"},
		{"startCmd", "wget ftp://a:b@h/x && curl http://c:d@i:80/y", "wget ftp://a:" + Mask + "@h/x && curl http://c:" + Mask + "@i:80/y"},
		{"value", "https://bob@repo.example/x", "https://bob@repo.example/x"},
		{"value", "https://repo.example/a:b@c", "https://repo.example/a:b@c"},
		{"image", "registry.example:5000/app:1", "registry.example:5000/app:1"},
		// An "@" in the user or the password: the host is after the last one.
		{"value", "https://me@example.com:hunter2@repo.example/x", "https://me@example.com:" + Mask + "@repo.example/x"},
		{"value", "https://bob:p@ss@repo.example/x", "https://bob:" + Mask + "@repo.example/x"},
		{"value", "https://bob@repo.example:8080/x", "https://bob@repo.example:8080/x"},
	} {
		if got := String(c.key, c.in); got != c.want {
			t.Errorf("String(%q, %q) = %q, want %q", c.key, c.in, got, c.want)
		}
	}
}

// A JSON document keeps its bytes but for the masked strings; one without credentials
// is the same slice.
func TestDocumentJSON(t *testing.T) {
	in := `{"kind": "application",  "spec": {"template": {"spec": {"containers": [
  {"image": "r/app:1", "imagePullUser": "bob", "imagePullPasswd": "hunter2", "args": ["http://u:p@h/"]}],
  "n": 1.50, "imagepullpasswd": {"not": "a string"}, "pwd": null}}},
 "uris": [{"value": "http://u:s3cret@h/p.tgz", "user": "u", "pwd": "s3cret"}]}`
	want := strings.NewReplacer(`"hunter2"`, `"******"`, `u:p@h`, `u:******@h`, `u:s3cret@h`, `u:******@h`, `"pwd": "s3cret"`, `"pwd": "******"`).Replace(in)
	if got := string(Document([]byte(in))); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	plain := []byte(`{"kind": "application", "pwd": ""}`)
	if got := Document(plain); &got[0] != &plain[0] {
		t.Errorf("a document without credentials was copied: %s", got)
	}
}

func TestDocumentYAML(t *testing.T) {
	in := "kind: process # a comment\nspec:\n  uris:\n    - value: http://u:s3cret@h/p.tgz\n      pwd: 1234\n      user: u\n  image: r/app\n"
	got := string(Document([]byte(in)))
	for _, lacks := range []string{"s3cret", "1234"} {
		if strings.Contains(got, lacks) {
			t.Errorf("%q left in:\n%s", lacks, got)
		}
	}
	for _, has := range []string{"# a comment", "user: u", `pwd: "******"`, "image: r/app"} {
		if !strings.Contains(got, has) {
			t.Errorf("%q missing in:\n%s", has, got)
		}
	}
	plain := "kind: process\nspec: {}\n"
	if got := string(Document([]byte(plain))); got != plain {
		t.Errorf("a document without credentials changed: %q", got)
	}
}

// A credential given as an alias is masked where its anchor is too; an alias of a
// collection that holds it is walked no further (it may hold itself).
func TestDocumentYAMLAlias(t *testing.T) {
	in := "x-pw: &pw hunter2\nspec:\n  containers:\n    - imagePullPasswd: *pw\n      image: r/app\n"
	got := string(Document([]byte(in)))
	if strings.Contains(got, "hunter2") || !strings.Contains(got, "imagePullPasswd: *pw") || !strings.Contains(got, "image: r/app") {
		t.Errorf("got:\n%s", got)
	}
	loop := "a: &a {pwd: *a, b: *a}\n"
	if got := string(Document([]byte(loop))); got != loop {
		t.Errorf("a self-referring alias changed: %q", got)
	}
}
