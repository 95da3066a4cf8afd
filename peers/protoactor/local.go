package main

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/router"
)

// runTimeout bounds every wait for a scenario's end: a lost message fails the run, never hangs it.
const runTimeout = 10 * time.Minute

var errTimeout = errors.New("the run did not finish within 10 minutes")

// marks is a measured span, marked from any goroutine (the first mark of each kind wins).
type marks struct {
	startOnce, endOnce sync.Once
	start, end         time.Time
}

func (m *marks) begin()  { m.startOnce.Do(func() { m.start = time.Now() }) }
func (m *marks) finish() { m.endOnce.Do(func() { m.end = time.Now() }) }

// wait blocks until ch yields or the run times out.
func wait[T any](ch <-chan T) (T, error) {
	select {
	case v := <-ch:
		return v, nil
	case <-time.After(runTimeout):
		var zero T
		return zero, errTimeout
	}
}

// ---- ping-pong ----

type ping struct{ sender *actor.PID }
type pong struct{}
type startPing struct{ ponger *actor.PID }

type pinger struct {
	left   uint64
	msg    *ping
	ponger *actor.PID
	m      *marks
	done   chan<- struct{}
}

func (p *pinger) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *startPing:
		// One immutable ping, sent every time, as Proto.Actor's in-process benchmark does.
		p.msg = &ping{sender: ctx.Self()}
		p.ponger = msg.ponger
		p.m.begin()
		ctx.Send(p.ponger, p.msg)
	case *pong:
		p.left--
		if p.left > 0 {
			ctx.Send(p.ponger, p.msg)
		} else {
			p.m.finish()
			p.done <- struct{}{}
		}
	}
}

var thePong = &pong{}

func pongerReceive(ctx actor.Context) {
	if msg, ok := ctx.Message().(*ping); ok {
		ctx.Send(msg.sender, thePong)
	}
}

// Both actors on the default dispatcher; the thread count is GOMAXPROCS (1 or 2).
func pingPong(count uint64, n int) (outcome, error) {
	threads(n)
	system := actor.NewActorSystem()
	root := system.Root
	var m marks
	done := make(chan struct{}, 1)
	ponger := root.Spawn(actor.PropsFromFunc(pongerReceive))
	p := root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &pinger{left: count, m: &m, done: done}
	}))
	root.Send(p, &startPing{ponger: ponger})
	if _, err := wait(done); err != nil {
		return outcome{}, err
	}
	root.StopFuture(p).Wait()
	root.StopFuture(ponger).Wait()
	return outcome{elapsed: m.end.Sub(m.start), messages: 2 * count}, nil
}

// ---- skynet ----

type total uint64

type node struct {
	num, size, b, sum, left uint64
}

func (n *node) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		if n.size == 1 {
			ctx.Send(ctx.Parent(), total(n.num))
			ctx.Stop(ctx.Self())
			return
		}
		step := n.size / n.b
		n.left = n.b
		for i := uint64(0); i < n.b; i++ {
			ctx.Spawn(nodeProps(n.num+i*step, step, n.b))
		}
	case total:
		n.sum += uint64(msg)
		n.left--
		if n.left == 0 {
			ctx.Send(ctx.Parent(), total(n.sum))
			ctx.Stop(ctx.Self())
		}
	}
}

func nodeProps(num, size, b uint64) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &node{num: num, size: size, b: b} })
}

func skynetActors(leaves, b uint64) uint64 {
	n, t := leaves, uint64(0)
	for n >= 1 {
		t += n
		if n == 1 {
			break
		}
		n /= b
	}
	return t
}

// Every node on the default dispatcher with GOMAXPROCS 1; each stops itself once it has
// reported; the time runs until the top actor (and so every node) has stopped.
func skynetRun(z sizes) (outcome, error) {
	leaves, b := z["leaves"], z["branching"]
	if b < 2 {
		return outcome{}, usageError("--branching must be at least 2")
	}
	n := leaves
	for n > 1 && n%b == 0 {
		n /= b
	}
	if n != 1 || leaves < b {
		return outcome{}, usageError("--leaves must be a power of --branching")
	}
	threads(1)
	t0 := time.Now()
	system := actor.NewActorSystem()
	result := make(chan uint64, 1)
	top := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch msg := ctx.Message().(type) {
		case *actor.Started:
			ctx.Spawn(nodeProps(0, leaves, b))
		case total:
			result <- uint64(msg)
		}
	}))
	sum, err := wait(result)
	if err != nil {
		return outcome{}, err
	}
	system.Root.StopFuture(top).Wait()
	elapsed := time.Since(t0)
	if err := expect("sum", sum, leaves*(leaves-1)/2); err != nil {
		return outcome{}, err
	}
	return outcome{elapsed: elapsed, messages: skynetActors(leaves, b)}, nil
}

// ---- ThreadRing / ParallelThreadRing ----

type setNext struct{ next *actor.PID }
type startToken struct{ hops uint64 }
type token struct{ left uint64 }

type ring struct {
	m          marks
	tokensLeft atomic.Int64
	finished   chan struct{}
}

type link struct {
	next *actor.PID
	r    *ring
}

func (l *link) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case token:
		if msg.left > 0 {
			ctx.Send(l.next, token{msg.left - 1})
		} else if l.r.tokensLeft.Add(-1) == 0 {
			l.r.m.finish()
			l.r.finished <- struct{}{}
		}
	case *setNext:
		l.next = msg.next
	case *startToken:
		l.r.m.begin()
		ctx.Send(l.next, token{msg.hops - 1})
	}
}

// The ring on the default dispatcher with GOMAXPROCS 1; each link learns its successor from a
// first message (a PID exists only once spawned), then the links that start a token get it.
func ringRun(agents uint64, tokens []uint64) (outcome, error) {
	threads(1)
	var hops uint64
	for _, t := range tokens {
		hops += t
	}
	r := &ring{finished: make(chan struct{}, 1)}
	r.tokensLeft.Store(int64(len(tokens)))
	system := actor.NewActorSystem()
	root := system.Root
	props := actor.PropsFromProducer(func() actor.Actor { return &link{r: r} })
	links := make([]*actor.PID, agents)
	for i := range links {
		links[i] = root.Spawn(props)
	}
	// Every successor is enqueued before any token: mailboxes are FIFO per sender.
	for k := range links {
		root.Send(links[k], &setNext{next: links[(k+1)%len(links)]})
	}
	for k, t := range tokens {
		root.Send(links[k], &startToken{hops: t})
	}
	if _, err := wait(r.finished); err != nil {
		return outcome{}, err
	}
	for _, l := range links {
		root.Stop(l)
	}
	if err := expect("tokens left", uint64(r.tokensLeft.Load()), 0); err != nil {
		return outcome{}, err
	}
	return outcome{elapsed: r.m.end.Sub(r.m.start), messages: hops}, nil
}

func threadRing(z sizes) (outcome, error) {
	if z["agents"] < 2 {
		return outcome{}, usageError("--agents must be at least 2")
	}
	return ringRun(z["agents"], []uint64{z["hops"]})
}

// splitHops is cohort's split: tokens-1 tokens of ceil(hops/tokens), the last the rest; the
// most even split where that leaves the last token nothing.
func splitHops(hops, tokens uint64) []uint64 {
	each := (hops + tokens - 1) / tokens
	v := make([]uint64, 0, tokens)
	if hops > each*(tokens-1) {
		for k := uint64(0); k+1 < tokens; k++ {
			v = append(v, each)
		}
		return append(v, hops-each*(tokens-1))
	}
	for k := uint64(0); k < tokens; k++ {
		e := hops / tokens
		if k < hops%tokens {
			e++
		}
		v = append(v, e)
	}
	return v
}

func parallelThreadRing(z sizes) (outcome, error) {
	if z["tokens"] > z["agents"] || z["hops"] < z["tokens"] {
		return outcome{}, usageError("need --tokens <= --agents and --hops >= --tokens")
	}
	return ringRun(z["agents"], splitHops(z["hops"], z["tokens"]))
}

// ---- CountingActor ----

type value uint64
type getCount struct{}
type tally struct {
	at         time.Time
	count, sum uint64
}

type counter struct{ count, sum uint64 }

func (c *counter) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case value:
		c.count++
		c.sum += uint64(msg)
	case *getCount:
		ctx.Respond(&tally{at: time.Now(), count: c.count, sum: c.sum})
	}
}

// countingSum is 1 + 2 + ... + n, wrapping.
func countingSum(n uint64) uint64 {
	if n%2 == 0 {
		return (n / 2) * (n + 1)
	}
	return n * ((n + 1) / 2)
}

// The counter on the default dispatcher, GOMAXPROCS 2; the main goroutine floods it with
// Root.Send, then asks for the count (RequestFuture).
func counting(count uint64) (outcome, error) {
	threads(2)
	system := actor.NewActorSystem()
	root := system.Root
	c := root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &counter{} }))
	t0 := time.Now()
	for v := uint64(1); v <= count; v++ {
		root.Send(c, value(v))
	}
	res, err := root.RequestFuture(c, &getCount{}, runTimeout).Result()
	if err != nil {
		return outcome{}, err
	}
	t := res.(*tally)
	root.StopFuture(c).Wait()
	if err := expect("count", t.count, count); err != nil {
		return outcome{}, err
	}
	if err := expect("sum", t.sum, countingSum(count)); err != nil {
		return outcome{}, err
	}
	return outcome{elapsed: t.at.Sub(t0), messages: count}, nil
}

// ---- 1:N fan-out ----

type num uint64
type done struct{ n uint64 }

type fanWorker struct{ left, received uint64 }

func (w *fanWorker) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(num); ok {
		w.received++
		w.left--
		if w.left == 0 {
			ctx.Send(ctx.Parent(), &done{n: w.received})
		}
	}
}

// tallier sums the workers' done reports and hands the total over once all have reported.
type tallier struct {
	left, received uint64
	out            chan<- uint64
}

func (t *tallier) add(msg *done) {
	t.received += msg.n
	t.left--
	if t.left == 0 {
		t.out <- t.received
	}
}

type producer struct {
	tallier
	workers, messages uint64
}

func (p *producer) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		props := actor.PropsFromProducer(func() actor.Actor { return &fanWorker{left: p.messages} })
		pids := make([]*actor.PID, p.workers)
		for i := range pids {
			pids[i] = ctx.Spawn(props)
		}
		// Proto.Actor's 1:N: a broadcast group router; a send to it is routed to every
		// routee from the sender's goroutine.
		group := ctx.Spawn(router.NewBroadcastGroup(pids...))
		for i := uint64(0); i < p.messages; i++ {
			ctx.Send(group, num(i))
		}
	case *done:
		p.add(msg)
	}
}

// Producer and workers (its children) on the default dispatcher, GOMAXPROCS 2. The time
// spans creation to the producer's stop (its children stopped first).
func fanOut(workers, messages uint64) (outcome, error) {
	threads(2)
	t0 := time.Now()
	system := actor.NewActorSystem()
	out := make(chan uint64, 1)
	p := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &producer{tallier: tallier{left: workers, out: out}, workers: workers, messages: messages}
	}))
	got, err := wait(out)
	if err != nil {
		return outcome{}, err
	}
	system.Root.StopFuture(p).Wait()
	elapsed := time.Since(t0)
	if err := expect("deliveries", got, workers*messages); err != nil {
		return outcome{}, err
	}
	return outcome{elapsed: elapsed, messages: got}, nil
}

// ---- self-send ----

type selfSignal struct{}

var theSignal = &selfSignal{}

type ssWorker struct{ count, batch, sent, handled uint64 }

func (w *ssWorker) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		for i := uint64(0); i < w.batch; i++ {
			ctx.Send(ctx.Self(), theSignal)
		}
		w.sent = w.batch
	case *selfSignal:
		w.handled++
		if w.sent < w.count {
			w.sent++
			ctx.Send(ctx.Self(), theSignal)
		} else if w.handled == w.count {
			ctx.Send(ctx.Parent(), &done{n: w.handled})
		}
	}
}

type master struct {
	tallier
	workers, count, batch uint64
}

func (m *master) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		props := actor.PropsFromProducer(func() actor.Actor {
			return &ssWorker{count: m.count, batch: m.batch}
		})
		for i := uint64(0); i < m.workers; i++ {
			ctx.Spawn(props)
		}
	case *done:
		m.add(msg)
	}
}

// Workers (children of the master) on the default dispatcher, GOMAXPROCS 2; a self-send is
// ctx.Send(ctx.Self(), ..). The time spans creation to the master's stop.
func selfSendRun(z sizes) (outcome, error) {
	workers, count, batch := z["workers"], z["message-count"], z["start-batch"]
	if batch > count {
		return outcome{}, usageError("--start-batch must be at most --message-count")
	}
	threads(2)
	t0 := time.Now()
	system := actor.NewActorSystem()
	out := make(chan uint64, 1)
	m := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &master{tallier: tallier{left: workers, out: out}, workers: workers, count: count, batch: batch}
	}))
	got, err := wait(out)
	if err != nil {
		return outcome{}, err
	}
	system.Root.StopFuture(m).Wait()
	elapsed := time.Since(t0)
	if err := expect("signals handled", got, workers*count); err != nil {
		return outcome{}, err
	}
	return outcome{elapsed: elapsed, messages: got}, nil
}
