package cli

import (
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestParseOutput(t *testing.T) {
	tests := []struct {
		in      string
		want    outputFormat
		wantErr bool
	}{
		{"", outTable, false},
		{"table", outTable, false},
		{"JSON", outJSON, false},
		{"yaml", outYAML, false},
		{" name ", outName, false},
		{"wide", "", true},
		{"yml", "", true},
	}
	for _, tt := range tests {
		got, err := parseOutput(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseOutput(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestKindArg(t *testing.T) {
	tests := []struct {
		in      string
		want    v4.Kind
		wantErr bool
	}{
		{"apps", v4.KindApplication, false},
		{"Application", v4.KindApplication, false},
		{"process", v4.KindProcess, false},
		{"procs", v4.KindProcess, false},
		{"cm", v4.KindConfigMap, false},
		{"svc", v4.KindService, false},
		{"deploy", v4.KindDeployment, false},
		{"ds", v4.KindDaemonset, false},
		{"secrets", v4.KindSecret, false},
		{"pods", "", true},
	}
	for _, tt := range tests {
		got, err := kindArg(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("kindArg(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestJSONToYAML(t *testing.T) {
	in := `{"kind":"configmap","metadata":{"name":"cfg","labels":{"b":"2","a":"1"}},"cpu":"0.5","on":"true","n":3,"list":[1,"x"],"empty":{}}`
	want := "kind: configmap\n" +
		"metadata:\n" +
		"  name: cfg\n" +
		"  labels:\n" +
		"    b: \"2\"\n" +
		"    a: \"1\"\n" +
		"cpu: \"0.5\"\n" +
		"on: \"true\"\n" +
		"n: 3\n" +
		"list:\n" +
		"  - 1\n" +
		"  - x\n" +
		"empty: {}\n"
	got, err := jsonToYAML([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("jsonToYAML =\n%s\nwant\n%s", got, want)
	}
}

func TestObjectRef(t *testing.T) {
	if got := objectRef(v4.KindProcess, "defaultGroup", "gamesvc"); got != "process/gamesvc" {
		t.Errorf("default namespace: %q", got)
	}
	if got := objectRef(v4.KindProcess, "ns-a", "gamesvc"); got != "process ns-a/gamesvc" {
		t.Errorf("other namespace: %q", got)
	}
}

func TestHumanDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-5 * time.Second, "<invalid>"},
		{-500 * time.Millisecond, "0s"},
		{0, "0s"},
		{45 * time.Second, "45s"},
		{119 * time.Second, "119s"},
		{2 * time.Minute, "2m"},
		{5*time.Minute + 30*time.Second, "5m30s"},
		{10*time.Minute + 30*time.Second, "10m"},
		{179 * time.Minute, "179m"},
		{3 * time.Hour, "3h"},
		{3*time.Hour + 20*time.Minute, "3h20m"},
		{8*time.Hour + 20*time.Minute, "8h"},
		{47 * time.Hour, "47h"},
		{50 * time.Hour, "2d2h"},
		{72 * time.Hour, "3d"},
		{30 * 24 * time.Hour, "30d"},
		{(2*365 + 10) * 24 * time.Hour, "2y10d"},
		{9 * 365 * 24 * time.Hour, "9y"},
	}
	for _, tt := range tests {
		if got := humanDuration(tt.d); got != tt.want {
			t.Errorf("humanDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := age(time.Time{}, testNow); got != "<unknown>" {
		t.Errorf("age(zero) = %q", got)
	}
}
