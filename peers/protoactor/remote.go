package main

// Remote ping-pong between two processes on loopback, after Proto.Actor's own remote
// benchmark (examples/remote-benchmark: an echo actor that learns its client's PID from a
// Start request, then answers each Ping with a Pong), with cohort-bench remote-ping-pong's
// shape: `clients` client actors, each keeping `in-flight` pings outstanding and sending the
// next one when a pong comes back; both directions counted. This process is the client node;
// it starts the echo node as a child (`peer-protoactor remote-ping-pong-server`), which exits
// when its standard input closes, so the child never outlives this process.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/cohort/peers/protoactor/messages"
)

const serverCommand = "remote-ping-pong-server"

func echoName(i int) string { return "echo-" + strconv.Itoa(i) }

// echo answers its client's pings.
type echo struct{ client *actor.PID }

func (e *echo) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *messages.Ping:
		ctx.Send(e.client, &messages.Pong{SentNs: msg.SentNs})
	case *messages.Start:
		e.client = msg.Sender
		ctx.Respond(&messages.Started{})
	}
}

// serve is the echo node: `clients` named echo actors on a remote listening on an ephemeral
// loopback port; prints `LISTEN <address>`, then serves until standard input closes.
func serve(args []string) int {
	clients := 1
	if len(args) == 2 && args[0] == "--clients" {
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "%s: --clients takes a whole number of at least 1\n", serverCommand)
			return 2
		}
		clients = n
	}
	system := actor.NewActorSystem()
	r := remote.NewRemote(system, remote.Configure("127.0.0.1", 0))
	r.Start()
	props := actor.PropsFromProducer(func() actor.Actor { return &echo{} })
	for i := 0; i < clients; i++ {
		if _, err := system.Root.SpawnNamed(props, echoName(i)); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", serverCommand, err)
			return 1
		}
	}
	fmt.Printf("LISTEN %s\n", system.Address())
	_, _ = io.Copy(io.Discard, os.Stdin)
	r.Shutdown(false)
	return 0
}

// child is the echo node's process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
}

func startChild(clients uint64) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, serverCommand, "--clients", strconv.FormatUint(clients, 10))
	cmd.Stderr = os.Stderr
	// Killed with this process even if it dies without closing the pipe.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("could not start the echo node: %w", err)
	}
	c := &child{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTEN ")
	if err != nil || !ok {
		c.stop()
		return nil, fmt.Errorf("the echo node did not start (its first line: %q, %v)", line, err)
	}
	c.addr = addr
	return c, nil
}

// stop closes the child's input, waits for it to exit (killing it after 10 s) and reaps it.
func (c *child) stop() {
	_ = c.stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-exited
	}
}

type goPing struct{}

// client pings its echo actor, `inFlight` pings outstanding, until `pings` came back.
type client struct {
	echo                  *actor.PID
	slot                  uint32
	pings, sent, received uint64
	inFlight              uint64
	base                  time.Time
	latencies             []int64
	done                  chan<- []int64
}

func (c *client) ping(ctx actor.Context) {
	c.sent++
	ctx.Send(c.echo, &messages.Ping{Slot: c.slot, SentNs: uint64(time.Since(c.base))})
}

func (c *client) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *messages.Pong:
		c.received++
		if c.latencies != nil {
			c.latencies = append(c.latencies, int64(time.Since(c.base))-int64(msg.SentNs))
		}
		if c.sent < c.pings {
			c.ping(ctx)
		} else if c.received == c.pings {
			c.done <- c.latencies
		}
	case *goPing:
		for i := uint64(0); i < c.inFlight && i < c.pings; i++ {
			c.ping(ctx)
		}
	}
}

// remoteRound runs one round over two fresh nodes; with `record`, every round trip's latency.
func remoteRound(clients, pings, inFlight uint64, record bool) (time.Duration, []int64, error) {
	if clients > 10_000 {
		return 0, nil, usageError("--clients must be at most 10000")
	}
	server, err := startChild(clients)
	if err != nil {
		return 0, nil, err
	}
	defer server.stop()
	system := actor.NewActorSystem()
	r := remote.NewRemote(system, remote.Configure("127.0.0.1", 0))
	r.Start()
	defer r.Shutdown(false)
	root := system.Root
	done := make(chan []int64, clients)
	base := time.Now()
	pids := make([]*actor.PID, clients)
	for i := range pids {
		echoPID := actor.NewPID(server.addr, echoName(i))
		c := &client{echo: echoPID, slot: uint32(i), pings: pings, inFlight: inFlight, base: base, done: done}
		if record {
			c.latencies = make([]int64, 0, pings)
		}
		pids[i] = root.Spawn(actor.PropsFromProducer(func() actor.Actor { return c }))
		// The benchmark's handshake: the echo learns its client, and the connection is up
		// before the clock starts.
		res, err := root.RequestFuture(echoPID, &messages.Start{Sender: pids[i]}, 30*time.Second).Result()
		if err != nil {
			return 0, nil, fmt.Errorf("echo %d did not answer Start: %w", i, err)
		}
		if _, ok := res.(*messages.Started); !ok {
			return 0, nil, fmt.Errorf("echo %d answered Start with %T", i, res)
		}
	}
	started := time.Now()
	for _, p := range pids {
		root.Send(p, &goPing{})
	}
	var all []int64
	for range pids {
		l, err := wait(done)
		if err != nil {
			return 0, nil, err
		}
		all = append(all, l...)
	}
	elapsed := time.Since(started)
	if err := server.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		return 0, nil, fmt.Errorf("the echo node died during the round: %v", err)
	}
	return elapsed, all, nil
}

// `--clients` clients, each `--messages` messages (pings and pongs together), `--in-flight`
// pings outstanding; the time spans the first ping to the last pong.
func remotePingPong(z sizes) (outcome, error) {
	if z["messages"] < 2 {
		return outcome{}, usageError("--messages must be at least 2 (a ping and its pong)")
	}
	pings := z["messages"] / 2
	elapsed, _, err := remoteRound(z["clients"], pings, z["in-flight"], false)
	if err != nil {
		return outcome{}, err
	}
	return outcome{elapsed: elapsed, messages: 2 * pings * z["clients"]}, nil
}

// One client, one ping in flight, `--round-trips` round trips; reports their median.
func remoteLatency(z sizes) (outcome, error) {
	trips := z["round-trips"]
	elapsed, l, err := remoteRound(1, trips, 1, true)
	if err != nil {
		return outcome{}, err
	}
	if err := expect("round trips recorded", uint64(len(l)), trips); err != nil {
		return outcome{}, err
	}
	sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
	p50 := l[(len(l)-1)/2]
	if p50 < 1 {
		p50 = 1
	}
	return outcome{elapsed: elapsed, messages: 2 * trips, p50: time.Duration(p50)}, nil
}
