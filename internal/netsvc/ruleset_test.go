package netsvc

import "testing"

// A delta touches what changed only: the chains and elements of the VIP:ports that
// went, changed or came.
func TestRulesetDelta(t *testing.T) {
	_, st := renderFull([]forward{{"10.254.0.1 . tcp . 80", "rule a"}, {"10.254.0.2 . tcp . 80", "rule b"}, {"10.254.0.3 . tcp . 80", "rule c"}})
	delta := renderDelta(st, []forward{{"10.254.0.1 . tcp . 80", "rule a2"}, {"10.254.0.3 . tcp . 80", "rule c"}, {"10.254.0.4 . udp . 53", "rule d"}})
	want := "delete element ip berth services { 10.254.0.2 . tcp . 80 }\nflush chain ip berth svc_1\ndelete chain ip berth svc_1\n" +
		"flush chain ip berth svc_0\nadd rule ip berth svc_0 rule a2\n" +
		"add chain ip berth svc_3\nadd rule ip berth svc_3 rule d\nadd element ip berth services { 10.254.0.4 . udp . 53 : goto svc_3 }\n"
	if delta != want {
		t.Errorf("delta:\n%s\nwant:\n%s", delta, want)
	}
	if again := renderDelta(st, []forward{{"10.254.0.1 . tcp . 80", "rule a2"}, {"10.254.0.3 . tcp . 80", "rule c"}, {"10.254.0.4 . udp . 53", "rule d"}}); again != "" {
		t.Errorf("no change gave a delta:\n%s", again)
	}
}
