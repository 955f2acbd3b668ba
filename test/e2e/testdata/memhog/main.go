// Command memhog is the revocable e2e test's owner: it holds little memory until the file
// named by -trigger appears, then allocates -mb megabytes, touches every page (so they
// count as used) and holds them until it is killed.
package main

import (
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	trigger := flag.String("trigger", "", "file whose appearance makes it grow")
	mb := flag.Int("mb", 256, "megabytes to allocate then")
	flag.Parse()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	var held [][]byte
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if held != nil || *trigger == "" {
			continue
		}
		if _, err := os.Stat(*trigger); err != nil {
			continue
		}
		for range *mb {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			held = append(held, b)
		}
	}
}
