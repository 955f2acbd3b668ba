#!/bin/sh
# start.sh PORT PIDFILE: start the demo server in the background, as BCS process packages
# do; the server writes its own pid to PIDFILE once it runs.
cd "$(dirname "$0")" || exit 1
./web-demo -port "$1" -pidfile "$2" &
