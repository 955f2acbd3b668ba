package v4

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// An applied list of stopped instances in any order is kept sorted, as IsStopped, which
// searches it, needs: each listed index is stopped, and no other.
func TestStoppedInstancesSorted(t *testing.T) {
	doc := strings.Replace(fmt.Sprintf(processDoc, ""), `"instance":1`, `"instance":5,"stoppedInstances":[3,0,4]`, 1)
	docs, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	stopped := *StoppedInstancesOf(docs[0].Object)
	if !slices.Equal(stopped, []int{0, 3, 4}) {
		t.Fatalf("stoppedInstances %v, want them sorted", stopped)
	}
	for idx := range 5 {
		if want := idx == 0 || idx == 3 || idx == 4; IsStopped(stopped, idx) != want {
			t.Errorf("IsStopped(%v, %d) = %t, want %t", stopped, idx, !want, want)
		}
	}
	// Start and stop keep it sorted too.
	stopped, _ = SetStopped(stopped, 1, true)
	stopped, _ = SetStopped(stopped, 3, false)
	if !slices.Equal(stopped, []int{0, 1, 4}) || !IsStopped(stopped, 1) || IsStopped(stopped, 3) {
		t.Errorf("after stop 1 and start 3: %v", stopped)
	}
}
