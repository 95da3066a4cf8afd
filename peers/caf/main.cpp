// The comparison scenarios on CAF 0.17 (Debian's libcaf-dev 0.17.6). One binary,
// `peer-caf <scenario> [--flag N]...`, one JSON line per run, as the Rust ports print:
// {"framework":"caf","scenario":"skynet","elapsed_s":1.2,"messages":1111111,"ok":true}
// Exit status 0 when the result was checked correct, 1 when wrong, 2 on bad usage.
// See peers/README.md for every choice.

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace caf;
using clk = std::chrono::steady_clock;
using u64 = uint64_t;

using ping_atom = atom_constant<atom("ping")>;
using pong_atom = atom_constant<atom("pong")>;
using next_atom = atom_constant<atom("next")>;
using done_atom = atom_constant<atom("done")>;
using get_atom = atom_constant<atom("get")>;
using self_atom = atom_constant<atom("self")>;

namespace {

struct marks {
  std::atomic<bool> started{false}, ended{false};
  clk::time_point start_at, end_at;
  void start() {
    if (!started.exchange(true))
      start_at = clk::now();
  }
  void end() {
    if (!ended.exchange(true))
      end_at = clk::now();
  }
  double elapsed() const {
    return std::chrono::duration<double>(end_at - start_at).count();
  }
};

struct sizes {
  std::map<std::string, u64> v{{"count", 1000000}, {"leaves", 1000000}, {"branching", 10},
                               {"agents", 503},    {"hops", 10000000},  {"tokens", 503},
                               {"workers", 100},   {"messages", 100000}, {"message-count", 1000000},
                               {"start-batch", 1}};
  u64 operator[](const char* k) const { return v.at(k); }
};

struct outcome {
  bool ok = false;
  double elapsed = 0;
  u64 messages = 0;
  std::string error;
};

outcome fail(std::string e) {
  outcome o;
  o.error = std::move(e);
  return o;
}

outcome done(double elapsed, u64 messages) {
  outcome o;
  o.ok = true;
  o.elapsed = elapsed;
  o.messages = messages;
  return o;
}

outcome expect(const char* what, u64 got, u64 want, double elapsed, u64 messages) {
  if (got != want)
    return fail(std::string("wrong ") + what + ": " + std::to_string(got) + ", expected "
                + std::to_string(want));
  return done(elapsed, messages);
}

double since(clk::time_point t0) {
  return std::chrono::duration<double>(clk::now() - t0).count();
}

// A configuration with `threads` scheduler workers (work-stealing policy, CAF's default).
struct config : actor_system_config {
  explicit config(size_t threads) {
    set("scheduler.max-threads", threads);
  }
};

// ---- ping-pong ----

struct pinger_state {
  u64 left = 0;
};

behavior ponger(event_based_actor*) {
  return {[](ping_atom) { return pong_atom::value; }};
}

behavior pinger(stateful_actor<pinger_state>* self, actor pong, u64 count, marks* m) {
  self->state.left = count;
  m->start();
  self->send(pong, ping_atom::value);
  return {[=](pong_atom) {
    if (--self->state.left > 0) {
      self->send(pong, ping_atom::value);
    } else {
      m->end();
      self->send_exit(pong, exit_reason::user_shutdown);
      self->quit();
    }
  }};
}

// One thread: both on a 1-worker scheduler. Two threads: both detached (a thread each).
outcome ping_pong(u64 count, bool two_threads) {
  marks m;
  {
    config cfg(1);
    actor_system sys{cfg};
    if (two_threads) {
      auto p = sys.spawn<detached>(ponger);
      sys.spawn<detached>(pinger, p, count, &m);
    } else {
      auto p = sys.spawn(ponger);
      sys.spawn(pinger, p, count, &m);
    }
  }
  if (!m.ended)
    return fail("the pinger never finished");
  return done(m.elapsed(), 2 * count);
}

// ---- skynet ----

struct node_state {
  u64 sum = 0;
  u64 left = 0;
};

behavior node(stateful_actor<node_state>* self, actor parent, u64 num, u64 size, u64 b) {
  if (size == 1) {
    self->send(parent, num);
    self->quit();
    return {};
  }
  u64 step = size / b;
  self->state.left = b;
  for (u64 i = 0; i < b; ++i)
    self->spawn(node, actor_cast<actor>(self), num + i * step, step, b);
  return {[=](u64 v) {
    self->state.sum += v;
    if (--self->state.left == 0) {
      self->send(parent, self->state.sum);
      self->quit();
    }
  }};
}

u64 skynet_actors(u64 leaves, u64 b) {
  u64 n = leaves, total = 0;
  while (n >= 1) {
    total += n;
    if (n == 1)
      break;
    n /= b;
  }
  return total;
}

// Every node on a 1-worker scheduler; the time runs until the actor system is destroyed
// (every actor gone).
outcome skynet(u64 leaves, u64 b) {
  auto t0 = clk::now();
  u64 sum = 0;
  {
    config cfg(1);
    actor_system sys{cfg};
    scoped_actor self{sys};
    self->spawn(node, actor_cast<actor>(self), u64{0}, leaves, b);
    self->receive([&](u64 s) { sum = s; });
  }
  return expect("sum", sum, leaves * (leaves - 1) / 2, since(t0), skynet_actors(leaves, b));
}

// ---- ThreadRing / ParallelThreadRing ----

struct ring_shared {
  marks m;
  std::atomic<u64> tokens_left{0};
  std::promise<void> finished;
};

struct link_state {
  actor next;
};

behavior link(stateful_actor<link_state>* self, ring_shared* r) {
  return {[=](next_atom, actor next) { self->state.next = next; },
          [=](ping_atom, u64 hops) {
            r->m.start();
            self->send(self->state.next, hops - 1);
          },
          [=](u64 left) {
            if (left > 0) {
              self->send(self->state.next, left - 1);
            } else if (r->tokens_left.fetch_sub(1) == 1) {
              r->m.end();
              r->finished.set_value();
            }
          }};
}

std::vector<u64> split_hops(u64 hops, u64 tokens) {
  u64 each = (hops + tokens - 1) / tokens;
  std::vector<u64> v;
  if (hops > each * (tokens - 1)) {
    v.assign(tokens - 1, each);
    v.push_back(hops - each * (tokens - 1));
  } else {
    for (u64 k = 0; k < tokens; ++k)
      v.push_back(hops / tokens + (k < hops % tokens ? 1 : 0));
  }
  return v;
}

// The ring on a 1-worker scheduler; each link learns its successor from a first message,
// then the links that start a token get it (`ping`, the token's hop count).
outcome ring(u64 agents, std::vector<u64> tokens) {
  u64 hops = 0;
  for (u64 t : tokens)
    hops += t;
  ring_shared r;
  r.tokens_left = tokens.size();
  {
    config cfg(1);
    actor_system sys{cfg};
    std::vector<actor> links;
    for (u64 i = 0; i < agents; ++i)
      links.push_back(sys.spawn(link, &r));
    // Every successor is known before any token moves: each link's `next` is enqueued
    // before the first token can reach it.
    for (u64 k = 0; k < agents; ++k)
      anon_send(links[k], next_atom::value, links[(k + 1) % agents]);
    for (u64 k = 0; k < tokens.size(); ++k)
      anon_send(links[k], ping_atom::value, tokens[k]);
    r.finished.get_future().wait();
    for (auto& l : links)
      anon_send_exit(l, exit_reason::user_shutdown);
  }
  return expect("tokens left", r.tokens_left.load(), 0, r.m.elapsed(), hops);
}

// ---- CountingActor ----

struct tally {
  clk::time_point at;
  u64 count = 0, sum = 0;
};

struct counter_state {
  u64 count = 0, sum = 0;
};

behavior counter(stateful_actor<counter_state>* self, std::promise<tally>* out) {
  return {[=](u64 v) {
            self->state.count += 1;
            self->state.sum += v;
          },
          [=](get_atom) {
            out->set_value(tally{clk::now(), self->state.count, self->state.sum});
            self->quit();
          }};
}

// The counter on a 1-worker scheduler; this (plain) thread writes with anon_send.
outcome counting(u64 count) {
  std::promise<tally> p;
  auto f = p.get_future();
  clk::time_point t0;
  {
    config cfg(1);
    actor_system sys{cfg};
    auto c = sys.spawn(counter, &p);
    t0 = clk::now();
    for (u64 v = 1; v <= count; ++v)
      anon_send(c, v);
    anon_send(c, get_atom::value);
    f.wait();
  }
  auto t = f.get();
  u64 a = count, b = count + 1;
  if (a % 2 == 0)
    a /= 2;
  else
    b /= 2;
  auto elapsed = std::chrono::duration<double>(t.at - t0).count();
  if (t.count != count)
    return expect("count", t.count, count, elapsed, count);
  return expect("sum", t.sum, a * b, elapsed, count);
}

// ---- 1:N fan-out ----

struct fan_state {
  u64 left = 0, received = 0;
};

behavior fan_worker(stateful_actor<fan_state>* self, actor producer, u64 messages) {
  self->state.left = messages;
  return {[=](u64) {
    self->state.received += 1;
    if (--self->state.left == 0) {
      self->send(producer, done_atom::value, self->state.received);
      self->quit();
    }
  }};
}

behavior producer(stateful_actor<fan_state>* self, u64 workers, u64 messages,
                  std::promise<u64>* out) {
  self->state.left = workers;
  auto grp = self->system().groups().get_local("input");
  for (u64 i = 0; i < workers; ++i)
    self->system().spawn_in_group(grp, fan_worker, actor_cast<actor>(self), messages);
  for (u64 i = 0; i < messages; ++i)
    self->send(grp, i);
  return {[=](done_atom, u64 n) {
    self->state.received += n;
    if (--self->state.left == 0) {
      out->set_value(self->state.received);
      self->quit();
    }
  }};
}

// Producer and workers on a 2-worker scheduler; the workers joined a local group "input"
// (CAF's 1:N), the producer sends each number once to the group. Creation to system teardown.
outcome fan_out(u64 workers, u64 messages) {
  auto t0 = clk::now();
  std::promise<u64> p;
  auto f = p.get_future();
  {
    config cfg(2);
    actor_system sys{cfg};
    sys.spawn(producer, workers, messages, &p);
    f.wait();
  }
  u64 got = f.get();
  return expect("deliveries", got, workers * messages, since(t0), got);
}

// ---- self-send ----

struct worker_state {
  u64 sent = 0, handled = 0;
};

behavior ss_worker(stateful_actor<worker_state>* self, actor master, u64 count, u64 batch) {
  for (u64 i = 0; i < batch; ++i)
    self->send(self, self_atom::value);
  self->state.sent = batch;
  return {[=](self_atom) {
    auto& s = self->state;
    s.handled += 1;
    if (s.sent < count) {
      s.sent += 1;
      self->send(self, self_atom::value);
    } else if (s.handled == count) {
      self->send(master, done_atom::value, s.handled);
      self->quit();
    }
  }};
}

behavior master(stateful_actor<fan_state>* self, u64 workers, std::promise<u64>* out) {
  self->state.left = workers;
  return {[=](done_atom, u64 n) {
    self->state.received += n;
    if (--self->state.left == 0) {
      out->set_value(self->state.received);
      self->quit();
    }
  }};
}

// Workers and master on a 2-worker scheduler; a self-send is send(self, ...).
outcome self_send(u64 workers, u64 count, u64 batch) {
  auto t0 = clk::now();
  std::promise<u64> p;
  auto f = p.get_future();
  {
    config cfg(2);
    actor_system sys{cfg};
    auto m = sys.spawn(master, workers, &p);
    for (u64 i = 0; i < workers; ++i)
      sys.spawn(ss_worker, m, count, batch);
    f.wait();
  }
  u64 got = f.get();
  return expect("signals handled", got, workers * count, since(t0), got);
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

int usage(const std::string& e) {
  std::fprintf(stderr,
               "peer-caf: %s\nusage: peer-caf <scenario> [--count N] [--leaves N] "
               "[--branching N] [--agents N] [--hops N] [--tokens N] [--workers N] "
               "[--messages N] [--message-count N] [--start-batch N]\n"
               "scenarios: ping-pong-one-thread, ping-pong-two-threads, skynet, thread-ring, "
               "parallel-thread-ring, counting-actor, fan-out, self-send\n",
               e.c_str());
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    return usage("no scenario");
  std::string sc = argv[1];
  sizes z;
  if (sc == "counting-actor")
    z.v["count"] = 3000000;
  if (sc == "self-send")
    z.v["workers"] = 50;
  for (int i = 2; i < argc; i += 2) {
    std::string flag = argv[i];
    if (flag.rfind("--", 0) != 0 || !z.v.count(flag.substr(2)))
      return usage("unknown flag " + flag);
    if (i + 1 >= argc)
      return usage(flag + " needs a value");
    char* end = nullptr;
    u64 n = std::strtoull(argv[i + 1], &end, 10);
    if (*argv[i + 1] == '\0' || *end != '\0' || n == 0)
      return usage(flag + " takes a whole number of at least 1");
    z.v[flag.substr(2)] = n;
  }
  outcome o;
  if (sc == "ping-pong-one-thread") {
    o = ping_pong(z["count"], false);
  } else if (sc == "ping-pong-two-threads") {
    o = ping_pong(z["count"], true);
  } else if (sc == "skynet") {
    u64 n = z["leaves"], b = z["branching"];
    if (b < 2)
      return usage("--branching must be at least 2");
    while (n > 1 && n % b == 0)
      n /= b;
    if (n != 1 || z["leaves"] < b)
      return usage("--leaves must be a power of --branching");
    o = skynet(z["leaves"], b);
  } else if (sc == "thread-ring") {
    if (z["agents"] < 2)
      return usage("--agents must be at least 2");
    o = ring(z["agents"], {z["hops"]});
  } else if (sc == "parallel-thread-ring") {
    if (z["tokens"] > z["agents"] || z["hops"] < z["tokens"])
      return usage("need --tokens <= --agents and --hops >= --tokens");
    o = ring(z["agents"], split_hops(z["hops"], z["tokens"]));
  } else if (sc == "counting-actor") {
    o = counting(z["count"]);
  } else if (sc == "fan-out") {
    o = fan_out(z["workers"], z["messages"]);
  } else if (sc == "self-send") {
    if (z["start-batch"] > z["message-count"])
      return usage("--start-batch must be at most --message-count");
    o = self_send(z["workers"], z["message-count"], z["start-batch"]);
  } else {
    return usage("unknown scenario " + sc);
  }
  std::string head = "{\"framework\":\"caf\",\"scenario\":" + json_string(sc);
  if (o.ok)
    std::printf("%s,\"elapsed_s\":%.9f,\"messages\":%llu,\"ok\":true}\n", head.c_str(),
                o.elapsed, static_cast<unsigned long long>(o.messages));
  else
    std::printf("%s,\"ok\":false,\"error\":%s}\n", head.c_str(), json_string(o.error).c_str());
  return o.ok ? 0 : 1;
}
