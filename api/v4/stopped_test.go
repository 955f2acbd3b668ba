package v4

import (
	"errors"
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

// A hostile list of stopped instances, each one a problem, gets a bounded answer: three
// bytes an item (-1,) made an error each, 690,000 of them (81 MB of JSON) for a 2 MiB
// body. So does a stream of documents each with many problems.
func TestStoppedInstancesErrorsBounded(t *testing.T) {
	list := strings.TrimSuffix(strings.Repeat("-1,", 20*maxFieldErrors), ",")
	doc := strings.Replace(fmt.Sprintf(processDoc, ""), `"instance":1`, `"instance":1,"stoppedInstances":[`+list+`]`, 1)
	for _, data := range []string{doc, "[" + strings.TrimSuffix(strings.Repeat(doc+",", 5), ",") + "]"} {
		_, err := Parse([]byte(data))
		var fe FieldErrors
		if !errors.As(err, &fe) {
			t.Fatalf("want FieldErrors, got %v", err)
		}
		if len(fe) != maxFieldErrors+1 || !strings.Contains(fe[len(fe)-1].Message, "more may not be listed") {
			t.Errorf("%d errors, the last %q: want %d and a last saying more are not listed", len(fe), fe[len(fe)-1], maxFieldErrors)
		}
	}
}
