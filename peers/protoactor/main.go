// The comparison scenarios on Proto.Actor (Go). One binary,
// `peer-protoactor <scenario> [--flag N]...`, one JSON line per run, as the other ports print:
// {"framework":"protoactor","scenario":"skynet","elapsed_s":1.2,"messages":1111111,"ok":true}
// Exit status 0 when the result was checked correct, 1 when wrong, 2 on bad usage.
// See peers/README.md for every choice.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// sizes holds every --flag's value; defaults are the source benchmarks' full sizes.
type sizes map[string]uint64

func defaults(scenario string) sizes {
	z := sizes{
		"count": 1_000_000, "leaves": 1_000_000, "branching": 10, "agents": 503,
		"hops": 10_000_000, "tokens": 503, "workers": 100, "messages": 100_000,
		"message-count": 1_000_000, "start-batch": 1,
		"clients": 1, "in-flight": 50, "round-trips": 20_000,
	}
	switch scenario {
	case "counting-actor":
		z["count"] = 3_000_000
	case "self-send":
		z["workers"] = 50
	case "remote-ping-pong":
		z["messages"] = 200_000
	}
	return z
}

// outcome is one checked run: its span, the messages handled, and for the latency run the
// round trips' median.
type outcome struct {
	elapsed  time.Duration
	messages uint64
	p50      time.Duration
}

// usageError is bad input: exit status 2.
type usageError string

func (e usageError) Error() string { return string(e) }

func expect(what string, got, want uint64) error {
	if got != want {
		return fmt.Errorf("wrong %s: %d, expected %d", what, got, want)
	}
	return nil
}

var scenarios = map[string]func(z sizes) (outcome, error){
	"ping-pong-one-thread":     func(z sizes) (outcome, error) { return pingPong(z["count"], 1) },
	"ping-pong-two-threads":    func(z sizes) (outcome, error) { return pingPong(z["count"], 2) },
	"skynet":                   skynetRun,
	"thread-ring":              threadRing,
	"parallel-thread-ring":     parallelThreadRing,
	"counting-actor":           func(z sizes) (outcome, error) { return counting(z["count"]) },
	"fan-out":                  func(z sizes) (outcome, error) { return fanOut(z["workers"], z["messages"]) },
	"self-send":                selfSendRun,
	"remote-ping-pong":         remotePingPong,
	"remote-ping-pong-latency": remoteLatency,
}

func usage(e string) {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "peer-protoactor: %s\nusage: peer-protoactor <scenario> [--count N] "+
		"[--leaves N] [--branching N] [--agents N] [--hops N] [--tokens N] [--workers N] "+
		"[--messages N] [--message-count N] [--start-batch N] [--clients N] [--in-flight N] "+
		"[--round-trips N]\nscenarios: %s\n", e, strings.Join(names, ", "))
	os.Exit(2)
}

func parse(args []string) (string, sizes) {
	if len(args) == 0 {
		usage("no scenario")
	}
	name := args[0]
	if _, ok := scenarios[name]; !ok {
		usage("unknown scenario " + name)
	}
	z := defaults(name)
	for i := 1; i < len(args); i += 2 {
		flag := args[i]
		key := strings.TrimPrefix(flag, "--")
		if _, ok := z[key]; !ok || key == flag {
			usage("unknown flag " + flag)
		}
		if i+1 >= len(args) {
			usage(flag + " needs a value")
		}
		n, err := strconv.ParseUint(strings.ReplaceAll(args[i+1], "_", ""), 10, 64)
		if err != nil || n == 0 {
			usage(flag + " takes a whole number of at least 1, not " + strconv.Quote(args[i+1]))
		}
		z[key] = n
	}
	return name, z
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == serverCommand {
		os.Exit(serve(os.Args[2:]))
	}
	name, z := parse(os.Args[1:])
	o, err := scenarios[name](z)
	if _, bad := err.(usageError); bad {
		usage(err.Error())
	}
	line := map[string]any{"framework": "protoactor", "scenario": name, "ok": err == nil}
	if err != nil {
		line["error"] = err.Error()
	} else {
		line["elapsed_s"] = o.elapsed.Seconds()
		line["messages"] = o.messages
		if o.p50 > 0 {
			line["p50_ns"] = o.p50.Nanoseconds()
		}
	}
	out, _ := json.Marshal(line)
	fmt.Println(string(out))
	if err != nil {
		os.Exit(1)
	}
}

// threads sets how many OS threads run Go code at once: Go's counterpart of a scheduler with
// that many workers (a Proto.Actor actor cannot be placed on a thread).
func threads(n int) { runtime.GOMAXPROCS(n) }
