#!/usr/bin/env python3
"""Prints the README's "Measured on this machine" table from the results of
`manycore report` (report/results.json): every figure is one the CLI wrote.

Usage: python3 scripts/readme_table.py [report/results.json]
"""
import json
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "report/results.json"
recs = json.load(open(path))


def get(bench, case, impl, metric):
    for r in recs:
        if (r["bench"], r["case"], r["impl"], r["metric"]) == (bench, case, impl, metric):
            return r["value"]
    return None


def ns(v):
    return f"{v:.0f} ns" if v >= 100 else f"{v:.1f} ns"


def us(v):
    return f"{v:.0f} us" if v >= 100 else f"{v:.2f} us" if v < 10 else f"{v:.1f} us"


def ms(v):
    return f"{v:.3g} ms"


def steal_target(case):
    """The fork-join targets `manycore bench steal` judges (its summary)."""
    if case.startswith("fib("):
        return "T1 <= 2x Ts, T2 <= 1.5x Ts, <= 0.5x rayon, <= 0.8x chili"
    if case.startswith("knary(") and case.endswith(",1000)"):
        return "T2 <= Ts, T1 <= 1.05x Ts, efficiency >= 0.9"
    if case.startswith("tree_sum(") and not case.startswith("tree_sum(1023)"):
        return "T2 <= Ts, <= 0.5x rayon"
    return "T2 <= Ts"


rows = []
pp = lambda i: get("pingpong", "round_trip", i, "median")
raw, fut = pp("raw-atomic"), pp("raw-futex")
rows.append(("round trip, poll (call(..).wait() core 0 -> 1)", f"{ns(pp('manycore-poll'))} ({pp('manycore-poll')/raw:.2f}x)", f"raw atomic {ns(raw)}", "<= 1.5x raw"))
rows.append(("round trip, hybrid (default)", f"{ns(pp('manycore-hybrid'))} ({pp('manycore-hybrid')/raw:.2f}x)", f"raw atomic {ns(raw)}", "<= 1.5x raw"))
rows.append(("round trip, sleep", f"{ns(pp('manycore-sleep'))} ({pp('manycore-sleep')/fut:.2f}x)", f"raw futex {ns(fut)}", "<= 1.3x futex"))
rows.append(("round trip, peers", "", f"std mpsc {ns(pp('std-mpsc'))}, crossbeam {ns(pp('crossbeam-channel'))}", "poll <= 0.5x each"))
tp = lambda i: get("pingpong", "throughput", i, "median")
rows.append(("spawn throughput, hybrid (fire and forget)", f"{tp('manycore-hybrid'):.1f} Mmsg/s ({tp('manycore-hybrid')/tp('rtrb'):.2f}x)", f"rtrb {tp('rtrb'):.1f} Mmsg/s; rtrb-line (one item per cache line) {tp('rtrb-line'):.1f} Mmsg/s", ">= 0.5x rtrb"))
ic = lambda i: get("pingpong", "idle_cpu", i, "cpu")
rows.append(("idle CPU, hybrid / sleep", f"{ic('manycore-hybrid'):.2f} ms/s / {ic('manycore-sleep'):.2f} ms/s", "", "< 2 ms/s"))
call, rinv = get("invoke", "round_trip", "call", "median"), get("invoke", "round_trip", "remote-invoke", "median")
rows.append(("Remote::invoke round trip", f"{ns(rinv)} ({rinv/call:.3f}x)", f"call {ns(call)}", "<= 1.1x call"))
rows.append(("timeout lateness, sleep mode, p99", us(get("invoke", "timeout-lateness-sleep", "manycore", "p99")), "", "< 1000 us"))
t48 = get("reduce", "48-members", "manycore-tree-sleep", "median")
h48 = get("reduce", "48-members", "manycore-tree-sleep", "hops")
f48 = get("reduce", "48-members", "manycore-flat-sleep", "median")
rows.append(("reduce, 48 members (48 cores on 2 CPUs, sleep)", f"tree {us(t48)}, {h48:.0f} hops", f"flat {us(f48)}", "<= 4 hops"))
th48 = get("reduce", "48-members", "manycore-tree-hybrid", "median")
if th48 is not None and t48:
    rows.append(("reduce, 48 members, hybrid (the default)", f"tree {us(th48)} ({th48/t48:.2f}x sleep)", f"sleep {us(t48)}", "<= 1.2x sleep"))
kv_shapes = sorted({r["case"] for r in recs if r["bench"] == "kv" and r["impl"] == "manycore-hybrid" and r["metric"] == "median"},
                   key=lambda c: [r["case"] for r in recs].index(c))
within = []
for c in kv_shapes:
    h = get("kv", c, "manycore-hybrid", "median")
    fixed = [v for v in (get("kv", c, "manycore-poll", "median"), get("kv", c, "manycore-sleep", "median")) if v]
    if h and fixed:
        within.append(h / min(fixed) <= 1.5)
if within:
    rows.append(("kv store, default policy in each shape (cores 2/4/16, outside and core clients)", f"{sum(within)} of {len(within)} shapes within 1.5x of the best fixed policy", "poll, sleep (same run)", "every shape"))
os4, os4s = get("kv", "outside-sync/4c", "manycore-hybrid", "median"), get("kv", "outside-sync/4c", "manycore-sleep", "median")
if os4 is not None:
    rows.append(("kv store, synchronous outside clients, 4 cores on 2 CPUs", f"{us(os4 / 1000)} per op", f"sleep {us(os4s / 1000)}" if os4s else "", "<= 3 us"))
for n in (2, 4, 16):
    pb, dm = get("kv", f"pipelined-batch/{n}c", "manycore-hybrid", "throughput"), get("kv", f"peers/{n}t", "dashmap", "throughput")
    if pb is not None and dm:
        one = get("kv", f"pipelined/{n}c", "manycore-hybrid", "throughput")
        rows.append((f"kv store, one pipelined outside client, batches per shard, {n} cores", f"{pb:.1f} Mops/s ({pb/dm:.2f}x)", f"dashmap, {n} threads, {dm:.1f} Mops/s" + (f"; one invocation per op {one:.1f} Mops/s" if one else ""), ">= 1x dashmap"))
mr = lambda i: get("sched", "overload", i, "miss-rate")
rows.append(("deadline misses under overload", f"EDF {mr('edf'):.1f} %, priority {mr('priority'):.1f} %", f"FIFO {mr('fifo'):.1f} %", "EDF < FIFO"))
s64, u64 = get("sock", "rtt-64B-procs", "manycore-sock-hybrid", "median"), get("sock", "rtt-64B-procs", "unix", "median")
rows.append(("socket 64 B round trip, two processes (hybrid)", f"{s64:.2f} us ({s64/u64:.3f}x)", f"Unix socket {u64:.1f} us", "<= 0.33x Unix"))
sst, ust = get("sock", "stream-1MiB-procs", "manycore-sock-hybrid", "throughput"), get("sock", "stream-1MiB-procs", "unix", "throughput")
rows.append(("socket 1 MiB streaming, two processes", f"{sst:.0f} MiB/s ({sst/ust:.1f}x)", f"Unix socket {ust:.0f} MiB/s", ">= 2x Unix"))
sa, ua = get("sock", "rtt-64B-procs-async", "manycore-sock-tokio", "median"), get("sock", "rtt-64B-procs-async", "tokio-unix", "median")
if sa is not None and ua:
    rows.append(("socket 64 B round trip under tokio, two processes", f"{sa:.2f} us ({sa/ua:.2f}x)", f"tokio UnixStream {ua:.1f} us", "<= 0.5x tokio"))
sta, uta = get("sock", "stream-1MiB-procs-async", "manycore-sock-tokio", "throughput"), get("sock", "stream-1MiB-procs-async", "tokio-unix", "throughput")
if sta is not None and uta:
    rows.append(("socket 1 MiB streaming under tokio, two processes", f"{sta:.0f} MiB/s ({sta/uta:.1f}x)", f"tokio UnixStream {uta:.0f} MiB/s", ">= 2x tokio"))
fl = lambda c, i, m="median": get("flow", c, i, m)
if fl("local_fire", "flow") is not None:
    rows.append(("dataflow: fire a local instance", ns(fl("local_fire", "flow")), f"Core::spawn {ns(fl('local_fire', 'core-spawn'))}", "<= 50 ns"))
    rows.append(("dataflow: cross-core signal", f"{ns(fl('cross_core', 'flow-signal'))} ({fl('ratio', 'cross flow-signal/core-spawn'):.1f}x)", f"Core::spawn {ns(fl('cross_core', 'core-spawn'))}", "<= 1.5x spawn"))
    rows.append(("dataflow: tree graph, per node", f"{ns(fl('graph', 'flow', 'per_node'))}", f"tokio {ns(fl('graph', 'tokio', 'per_node'))}, dagx {ns(fl('graph', 'dagx', 'per_node'))}, rayon scope {ns(fl('graph', 'rayon-scope', 'per_node'))}", "<= 0.5x tokio, dagx"))
    rows.append(("dataflow: ping-pong over two pipes through the reactor", f"{us(fl('ping_pong', 'flow-epoll'))} ({fl('ratio', 'reactor flow-epoll/epoll-loop'):.1f}x)", f"hand-written epoll loop {us(fl('ping_pong', 'epoll-loop'))}", "<= 1.2x epoll loop"))
    if fl('ping_pong', 'flow-epoll-eventfd') is not None and fl('ratio', 'reactor flow-epoll-eventfd/epoll-loop-eventfd') is not None:
        rows.append(("dataflow: ping-pong over two eventfds through the reactor", f"{us(fl('ping_pong', 'flow-epoll-eventfd'))} ({fl('ratio', 'reactor flow-epoll-eventfd/epoll-loop-eventfd'):.1f}x)", f"hand-written epoll loop {us(fl('ping_pong', 'epoll-loop-eventfd'))}", "<= 1.2x epoll loop"))
cases = sorted({r["case"] for r in recs if r["bench"] == "steal" and r["impl"] == "manycore" and r["metric"] == "T2"},
               key=lambda c: [r["case"] for r in recs].index(c))
for c in cases:
    st = lambda i, m: get("steal", c, i, m)
    ts = st("sequential", "Ts")
    if ts is None:
        continue
    t1, t2 = st("manycore", "T1"), st("manycore", "T2")
    if t1 is None:
        continue
    rows.append((f"fork-join {c}, T1 / T2 on 2 cores", f"{ms(t1)} / {ms(t2)} (T2 {t2/ts:.2f}x Ts)",
                 f"sequential {ms(ts)}; rayon T2 {ms(st('rayon', 'T2'))}; chili T2 {ms(st('chili', 'T2'))}", steal_target(c)))
mp = lambda c, i, m="median": get("mpi", c, i, m)
if mp("round_trip 41B", "raw-mpi") is not None:
    rt_c, rt_r = mp("round_trip 41B", "call-engine"), mp("round_trip 41B", "raw-mpi")
    rows.append(("MPI: cross-rank call round trip, 2 ranks", f"{us(rt_c)} ({rt_c/rt_r:.2f}x)", f"raw MPI ping-pong {us(rt_r)}", "<= 1.3x raw"))
    sp_c, sp_r = mp("message_rate 33B", "spawn-engine"), mp("message_rate 33B", "raw-mpi")
    rows.append(("MPI: one-sided spawns, 2 ranks", f"{sp_c:.2f} Mmsg/s ({sp_c/sp_r:.2f}x)", f"raw MPI_Isend {sp_r:.2f} Mmsg/s", ">= 0.7x raw"))
    rd_c, rd_r = mp("reduce 4x2", "manycore"), mp("reduce 4x2", "raw-mpi")
    rows.append(("MPI: reduce, 4 ranks x 2 cores", f"{us(rd_c)} ({rd_c/rd_r:.2f}x)", f"MPI_Reduce {us(rd_r)}", "<= 1.5x MPI_Reduce"))
    ke = [(n, mp("knary(4,10,1000)", f"ranks-{n}", "efficiency")) for n in (2, 4)]
    ke = [f"{e:.2f} on {n} ranks" for n, e in ke if e is not None]
    if ke:
        rows.append(("MPI: distributed knary(4,10,1000), efficiency against the machine's capacity", ", ".join(ke), "", ">= 0.8"))
pi_cases = sorted({r["case"] for r in recs if r["bench"] == "steal" and r["impl"] == "rayon-on-manycore" and r["metric"] == "T2"},
                  key=lambda c: [r["case"] for r in recs].index(c))
for c in pi_cases:
    m2, r2 = get("steal", c, "rayon-on-manycore", "T2"), get("steal", c, "rayon-on-rayon-core", "T2")
    if m2 is None or not r2:
        continue
    rows.append((f"rayon crate, {c}, T2 on manycore's rayon-core", f"{ms(m2)} ({m2/r2:.2f}x)", f"on rayon-core {ms(r2)}", "<= 1x rayon-core"))
print("| measurement | manycore | peer (same run) | target |")
print("|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
