package main

// docIntro opens docs/benchmarks.md; the figures follow it.
const docIntro = `# Benchmarks

` + "`make bench`" + ` measures resyncd side by side with the alternatives a platform team
weighs it against, on one local control plane, in one run. Figures are ratios to a
contender measured in the same run, never absolute targets: timings on another
machine differ, ratios much less. ` + "`make test`" + ` never asserts a timing.

This file is written by the bench (` + "`bench/`" + `); the raw samples are in
` + "`bench/results/`" + `. ` + "`make bench-quick`" + ` runs it at N = 200 for development, and
` + "`BENCH_FLAGS=\"-profile DIR\"`" + ` adds pprof CPU and heap profiles of every resyncd run.
` + "`bin/bench -from bench/results/DATE.json -doc docs/benchmarks.md`" + ` writes this file again
from the samples of a run, and its plots (SVG files beside it, named after it) with it.

## What runs

- **The control plane**: etcd and kube-apiserver from ` + "`make bins`" + `, on loopback, with
  ` + "`--max-requests-inflight=3000`" + ` and ` + "`--max-mutating-requests-inflight=1000`" + ` so that the
  server's CPU, not its throttling, is the limit, and a /16 Service range. No
  controller runs: Deployments are stored, never rolled out, so statuses do not
  move once written. Each N starts on a new control plane: etcd's history grows
  with every write and delete until it is compacted, and 5,000 parents converged
  in 55 s on a new server against 64–103 s after the figures at N = 1,000. From
  N = 2,000 each measured cold run starts on a new one too, since emptying the
  old one costs more: at 5,000, emptying it took 31–39 s, starting a new
  server 7 s.
- **The load**: N HttpServices, 100 per namespace, each a web service with an
  image, two replicas, two environment variables, requests and limits, and a
  health check, so two children each (Deployment and Service). The bench writes
  its loads and resets of built-in kinds in protobuf, as the cluster's own
  controllers do, to spend less of the server on what it does not measure.
- **The contenders**, each its own process, one at a time, against the same
  objects:
  - **resyncd**: ` + "`resyncd once`" + ` (cold) and ` + "`resyncd run`" + ` (steady, drift) with the default configuration
    (` + "`driftCheck: local`" + `, ` + "`pageSize: 500`" + `, ` + "`apply.concurrency: 8`" + `) but for
    ` + "`apply.qps`" + `, ` + "`apply.burst`" + ` and ` + "`apply.maxWritesPerPass`" + `, lifted so that the
    server is the limit. With the defaults (50 writes/s, 2,000 writes a pass), cold
    convergence of N parents takes about 3N/50 seconds and ⌈3N/2000⌉ passes.
  - **resyncd, driftCheck server** (` + "`make bench-scale`" + `, at N = 1,000 only; ` + "`make bench`" + ` leaves it
    out to stay within 30 minutes): the same, with a server-side dry-run of every
    child each pass, the strategy GitOps tools use.
  - **resyncd, HttpService as a graph**: the same as resyncd, with
    ` + "`testdata/graphs/httpservice.yaml`" + ` in place of the built-in renderer: the same
    children, from CEL templates compiled against the API server's schemas at start.
  - **resyncd, two clusters of N/2** (` + "`make bench-scale`" + `, at N = 1,000 only): the same as resyncd, with a second control
    plane (started beside the first when this contender first runs, idle
    otherwise) and the N parents split, N/2 in each; one resyncd process with a
    ` + "`clusters`" + ` section keeps both in sync, each with its own clients, limiter and
    workers. Its pass time is its slower cluster's; its requests and bytes are
    both servers'. Both control planes share the machine's cores with resyncd, so
    the figure shows what one process pays for a second cluster, not the speed-up
    two machines would give.
  - **resyncd, N parents in one namespace** (` + "`make bench-scale`" + ` only, up to N = 5,000;
    ` + "`make bench`" + ` leaves it out with ` + "`-skip`" + `): the
    same as resyncd, with every parent in one namespace. A pass holds one
    namespace's children at a time, so its memory grows with the largest
    namespace: this is the bound.
  - **controller-runtime**: the reconciler a team would write: typed API structs,
    ` + "`For(HttpService).Owns(Deployment).Owns(Service)`" + `, ` + "`CreateOrUpdate`" + ` of
    both children setting each field it owns (so that defaults compare equal), and
    ` + "`Status().Update`" + ` only when the status differs; the manager's default settings
    (one worker, caches of every HttpService, Deployment and Service in the
    cluster, no client-side rate limit).
  - **controller-runtime, 8 workers**: the same with ` + "`MaxConcurrentReconciles: 8`" + `,
    as many as resyncd's ` + "`apply.concurrency`" + `: what a team that cares about cold
    convergence sets.
  - **raw-SSA floor**: one paged LIST of the parents, then exactly the applies
    resyncd makes on a cold start (every child, then the status) with resyncd's
    concurrency (8), no reading of children, no comparing, no rate limit: what this
    machine's API server can take.
  - **raw paged LIST**: the parents and resyncd's children (its label selector)
    read through client-go's dynamic client and pager with its defaults (500 a
    page), and thrown away.

## How each figure is made

For each N, each contender in turn (` + "`make bench`" + ` runs every contender at N = 1,000 and,
with ` + "`-all-up-to 1000`" + `, only those a target is on at 5,000: resyncd, the raw-SSA floor and
the raw LIST; ` + "`make bench-scale`" + ` runs those it names at every N):

1. **Cold**: N new HttpServices with no child and no status; the contender
   converges the cluster. Time is wall time from exec to exit (` + "`resyncd once`" + `, the
   floor) or, for controller-runtime, to its own report that every parent was
   reconciled without error. The bench then checks that every child exists and
   every status carries the current observedGeneration. The contenders a cold
   target is on (resyncd and the raw-SSA floor, and the graph against resyncd) converge
   ` + "`-reps`" + ` times up to N = 5,000 (` + "`-target-cold-reps-up-to`" + `), in rounds, each round starting one
   contender later: the API server slows as a bench goes on (etcd's history grows
   between its compactions), so that a contender always measured after the others
   would seem slower than it is (seen: the same graph contender 1.21× resyncd measured
   after it, 0.98× before it). The others converge once in ` + "`make bench`" + ` (` + "`-cold-reps-up-to 0`" + `;
   by default they repeat too up to N = 2,000), and once at every N above 5,000.
   A run has 15 minutes, or 150 ms a parent where that is longer (50 minutes at
   N = 20,000, where the API server's 60–75 writes a second take 13–16 minutes on a
   quick day and more than 25 on a slow one);
   one that has not converged by then is reported so, and not repeated.
2. **Steady**, on the cluster the contender's last cold run converged: for resyncd, one
   ` + "`resyncd run`" + ` whose passes the bench starts with SIGUSR1 (the interval is a
   day): its first pass (nothing remembered from an earlier pass: what a restart
   costs), then ` + "`-reps`" + ` rounds of a steady pass, drift and two more passes. For
   controller-runtime, a restart until every parent is reconciled again (what a
   resync or a new leader costs it). The contenders no target is on (controller-runtime in
   ` + "`make bench`" + `, which leaves the driftCheck server and two clusters to ` + "`make bench-scale`" + `)
   make one round there (` + "`-untargeted-rounds 1`" + `): driftCheck server's three took two minutes. The raw LIST runs beside resyncd's steady
   pass. The "seconds" column is what the process timed itself: resyncd's pass
   duration, the LIST loop, controller-runtime's start to reconciled.
3. **Drift**: 5% of the children, picked at random, are changed by another field
   manager, as ` + "`kubectl scale`" + ` or an edit would (Deployments scaled to 5,
   Services' targetPort changed); then one resyncd pass, and one more to show
   nothing is left, or one controller-runtime restart. The bench reads back every
   drifted child. resyncd's status writes there are ` + "`status.lastAppliedTime`" + ` of the
   parents whose children it repaired.

4. **The trade-off against watching** (` + "`-tradeoff-n`" + `, N = 1,000 in ` + "`make bench`" + `), after the
   figures above at that N:
   - **Among unrelated objects**: 4N Deployments and 4N Services of another team,
     100 per namespace, the same shape as the children but for their labels,
     created by another client before the contenders run and deleted after. Each
     of resyncd, controller-runtime (1 and 8 workers) and the raw LIST keeps the
     same N parents in sync among them as in step 2, ` + "`-reps`" + ` times, on a cluster
     the contender converged among them or found in sync as it keeps it (resyncd's
     after its own passes, the one worker's for the eight); the report sets
     peak RSS, peak heap, requests and bytes beside step 2's, without them.
     resyncd reads children with its label selector, so the server filters them
     out; controller-runtime's informers hold every Deployment and Service.
   - **Over time**: four more control planes, started side by side, each with N
     parents: one idle (converged by controller-runtime with 8 workers, then no client), one each
     under ` + "`resyncd run`" + ` at an interval of 30 s (the default) and of 3 minutes (` + "`-intervals`" + `), one under
     controller-runtime with its watches open. Once all are in sync, one window
     (3 minutes, ` + "`-window`" + `; a pass each interval, so the longer interval's plane makes one) is measured on all of them at once: the CPU time of each
     kube-apiserver and etcd process from /proc/PID/stat (user and system), and
     the requests and bytes of the four collections. Figures are scaled to an hour;
     "above the idle server" subtracts the idle plane's CPU. Control planes differ by
     a few percent even when idle (compare the 3-minute interval's plane with the
     idle one), which bounds what the window can tell apart. The figures among
     unrelated objects, which count memory, requests and bytes but no time, run
     on the first control plane meanwhile, from these planes' start.
   - **Drift latency**: on the 30-second plane, the 3-minute plane (each interval's
     plane up to 5 minutes) and the controller-runtime plane, at
     the same time, 60 children picked at random are changed (as in step 3) at
     random moments over 60 seconds (` + "`-latency-changes`" + `, ` + "`-latency-span`" + `). A
     watch of the bench's own on the contender's children stamps when the API
     server holds each drifted object and when it holds the repaired one; the
     figure is the time between, as p50, p99 (nearest rank) and max.
   - **Under churn** (` + "`-churn-window`" + `, 60 seconds; 0 leaves it out): on three of the
     control planes above, which hold the N parents in sync already, with 4N
     unrelated Deployments loaded into each (no Service: the churn changes
     Deployments; with as many Services beside them, each a ClusterIP to
     allocate, loading took the three servers 2.5–3.2 minutes, the Deployments
     alone under a minute): the 30-second plane and the
     controller-runtime plane, their contenders still running, and the idle plane,
     with controller-runtime with 8 workers started on it (the 3-minute plane is
     stopped). The quiet window and the churn are so measured on the same servers.
     Another client writes an annotation to each unrelated Deployment in turn, each once every N/10 seconds
     (at least every second): 4N / (N/10) = 40 writes a second at any N, up to 4 writes
     in flight (one at a time did 30–36 a second at 5,000 on this machine), so a
     slow write delays the next and the report gives the rate done.
     After 20 seconds of it (at most one period), one window is measured on the three
     at once: the servers' CPU, requests and bytes as over time, and the contender's
     own CPU (/proc/PID/stat) and its largest RSS, sampled every second; at the same
     time drift is injected as in the latency figure on the resyncd and the
     one-worker planes. The report puts the servers' CPU an hour, the watch's less
     polling's, quiet (the window above) and under churn on one line and gives the
     rate of unrelated change at which they cross.

5. **Graph depth** (` + "`-depth-n`" + `, N = 1,000 in ` + "`make bench-scale`" + `, 200 in ` + "`make bench-quick`" + `), before
   the figures above, on objects of its own: WebApp's CustomResourceDefinition
   (` + "`testdata/crds/`" + `) installed, N WebApps, 100 per namespace, each an image and two
   replicas. Two graphs of the same four children, a ConfigMap of settings, a Deployment
   naming it, a Service and a ConfigMap of the Service's address:
   ` + "`testdata/graphs/flat.yaml`" + `, one deep, each child reading only the parent, and
   ` + "`testdata/graphs/chain.yaml`" + `, four deep, each reading the live fields of the one before
   (the Service named after the live Deployment, the address ConfigMap holding the
   Service's clusterIP, which only the API server knows). For each, from nothing (the
   WebApps made new, no child, no status): ` + "`resyncd once`" + ` with the bench's configuration
   watching WebApps with that graph, again until a pass writes nothing (its summary's
   writes: children created, updated, deleted, taken, released, and statuses), at most
   8 passes that write. The figures are the passes that wrote and their seconds, wall
   time from exec to exit and the passes' durations as resyncd timed them. The bench
   then checks on the API server that every WebApp has its four children, the
   Deployment naming the settings ConfigMap, the chain's address ConfigMap holding its
   Service's clusterIP, and a status URL of that clusterIP; a run that does not
   converge is reported as such, out of the figures. ` + "`-reps`" + ` times, in rounds each
   starting with the other graph, after one unmeasured convergence of 100 WebApps
   under each (the first pass after WebApp is installed, and the first writes in new
   namespaces, are slower); once above N = 2,000. The WebApps and their children are
   deleted before the contenders run.
6. **The fixed part** (` + "`-fixed-n`" + `, 10 in ` + "`make bench`" + `), after graph depth and before
   the figures above, on the main control plane: resyncd converges that many parents
   (one cold ` + "`resyncd once`" + `), then one ` + "`resyncd run`" + ` makes its passes as in steps 2 and 3,
   with the raw LIST beside its steady passes. With so few parents, the peak RSS in
   sync is what every resyncd process holds whatever it manages. Its target is 1.1× the
   raw LIST's peak RSS with as many parents: a process of the same client-go clients and
   nothing else. The first bound, 35 MiB, stays in the record beside it: only leaving
   client-go's leader election and events behind would reach it.
7. **Replicas sharing the work** (` + "`-ring-n`" + `, N = 5,000 and 20,000 in ` + "`make bench-scale`" + `,
   200 in ` + "`make bench-quick`" + `), last, on parents of its own, N/20 namespaces named
   ` + "`team-0001`" + `, ` + "`team-0002`" + `, … (sequential names hash close together under FNV-1a,
   the ring's hard case). First, with the namespaces empty, three ` + "`resyncd run`" + `s start
   at once with the bench's configuration and
   ` + "`sharding: {enabled: true, identity: replica-N}`" + `, the ring's Leases in
   ` + "`resyncd-system`" + ` (leaseDuration, renewDeadline and retryPeriod at their defaults);
   the bench waits until the Leases show every namespace held by one replica, each
   replica holding some and none waiting. The ring forms before the work comes, as a
   fleet's replicas do: a replica that starts while it is alone holds everything until
   the others join, and at a start of all replicas at once its first pass can be the
   whole cluster's (seen here). Then the N HttpServices are loaded and converged by an
   unmeasured ` + "`resyncd once`" + ` (the ring's passes run only when the bench starts them
   with SIGUSR1; the interval is a day). Then one ` + "`resyncd run`" + ` with the bench's
   configuration, sharding off: its first pass and ` + "`-reps`" + ` steady passes. Then the
   ring: each replica's first pass, and ` + "`-reps`" + ` rounds of a steady pass of each replica
   alone, so that the API server's counts from the signal to the end of the pass are
   that replica's (a pass another replica ended meanwhile keeps the sample out of
   the figures), and one of the three at once. The API server's sharded LIST
   (` + "`ShardedListAndWatch`" + `) is on. The figures: each replica's parents, requests, bytes
   and pass seconds, and its peak RSS and heap over its whole run, against the one
   replica's. The targets, at N = 20,000: each replica's bytes within 0.4× of the one
   replica's, and its peak RSS within the fixed part (step 6, in the same run) plus a
   third of what the one replica holds above the fixed part, and 10% more. Memory that
   does not grow with the parents cannot be shared: since the one replica's memory is
   close to flat in N, "half the one replica's" would ask each replica for less than its
   fixed part.
8. **Against kro** (` + "`-kro-n`" + `, N = 1,000 in ` + "`make bench`" + `; 5,000, with kro's time
   for the chain at 1,000, in ` + "`make bench-kro`" + `), last. kro's controller (` + "`bin/kro`" + `, v0.9.4 built from the
   module proxy by ` + "`make kro`" + `) and resyncd serve the same ResourceGraphDefinition,
   ` + "`testdata/graphs/flat-rgd.yaml`" + ` (the WebApp graph, four children an instance, none
   reading another), and for the chain's convergence ` + "`chain-rgd.yaml`" + ` (the same
   children, each reading the one before). Each contender has a control plane of its own
   with kro's CRDs: the RGD is applied, the contender makes its CRD and stops, N instances
   are loaded (100 a namespace), and the contender starts again, timed from its exec
   until every instance converged: for kro, its own ` + "`/metrics`" + ` counting N instances
   ACTIVE (` + "`instance_state_transitions_total`" + `; no request to the API server); for
   resyncd, the end of the pass after which the API server holds every child and
   status. Then the API server is checked for every child and status of every instance,
   kro's too: a contender that left one out has its cold run marked failed. The
   contenders: kro as its Helm chart runs it (one instance worker, an info-level console
   log), kro with the settings of its controller-tuning page (10 workers, client QPS
   200 and burst 300, which v0.9.4 does not apply: controller-runtime lifted the limit
   before kro sets it), and resyncd (` + "`resourceGraphDefinitions.enabled`" + `, the bench's
   lifted write limits) at the trade-off's two intervals. kro's process (and its API
   server) goes on using CPU for a minute or two after its metrics count every instance
   ACTIVE: in a run of 2026-12-07 that slowed the resyncd run after it by half (63.8 s
   against 34.9 s at the other interval), and in another it tripled kro's API server CPU
   in the quiet window. So each cold run after a kro run, and the quiet window, waits
   until kro's process is idle (under 1% of a core over 2 s, at most 15 minutes), and the
   report gives how long it stayed busy. The four flat planes then run
   side by side over the trade-off's quiet window (the servers' CPU and traffic, the
   contender's CPU and RSS), under drift injected as in the trade-off (kro, tuned kro,
   resyncd at the shorter interval), and under the churn of 4N unrelated Deployments
   written at N/10-second periods, 40 writes a second (kro and resyncd at both
   intervals; tuned kro's informers are kro's, its plane is stopped). Requests and bytes
   are those of the WebApp kinds, ConfigMaps, Deployments, Services, RGDs, kro's
   GraphRevisions and CRDs. Targets, against kro with its chart's defaults: peak RSS
   (the largest of cold, quiet and churn) ≤ 0.5×; in the quiet window, resyncd at the
   longer interval, the API server's CPU and the bytes it sent ≤ 1.0×; cold convergence
   ≤ 1.0×; under churn the server's CPU ≤ 1.0× and resyncd's own CPU ≤ 0.5×; and the
   four-deep chain converges in one pass under resyncd, with kro's time beside it.

Requests and bytes come from the API server's own metrics
(` + "`apiserver_request_total`" + `, ` + "`apiserver_response_sizes`" + `, ` + "`apiserver_watch_events_sizes`" + `),
scraped before and after each run and restricted to the collections the
contenders use. The server's own requests to them are not told apart: its
ClusterIP repair loop LISTs every Service every 3 minutes and watches them, so
a run that spans one counts one more LIST, or the WATCH it ended, with its
events' bytes. Medians hide it; the steady pass's request target is judged on
the most of any pass, and its row shows that pass's requests beside the
median's. A LIST of the server's counts against resyncd there; a WATCH does
not, since resyncd opens none (its chart grants it no watch verb), and the
row names it apart. Discovery is left out (a few requests at each process start).
The API server records no size for write responses. The server's LIST
seconds are the sum of
` + "`apiserver_request_duration_seconds`" + ` over the run's LISTs of those collections: the
server's own time from receiving each page's request to the end of its
response, the floor of any client's pass (a client that reads slowly lengthens
it too). "Against the server" sets each pass against the server's time in
that same pass and gives the median and range of those ratios: the server's
time itself varies by a quarter from pass to pass at N = 1,000, and a ratio
of two medians taken from different passes would count that as the client's.
Peak RSS is the process's VmHWM, sampled every 10 ms. Peak heap is the
largest heap the Go runtime reports at a collection (every process runs with
` + "`GODEBUG=gctrace=1`" + `; the heap at the start or the end of marking, whichever is
larger, in whole MiB): the memory the program itself asks for, where RSS adds the
runtime, the binary and memory the runtime has not yet returned.

## What bounds each figure

- **Cold convergence** is bound by the API server: etcd, kube-apiserver and the
  contender share the machine's cores, and every contender makes about 3N writes
  (two children and a status per parent). The raw-SSA floor is the limit; resyncd's
  target is within 10% of it at every N. controller-runtime's default one worker
  makes its writes one at a time; with 8 workers it writes as resyncd does.
  resyncd's own CPU in a cold run of 5,000 parents is about 10 s over 56 s (a
  fifth of one core; in its profile, applying children 21%, writing statuses 17%,
  decoding the apply responses 14%, the collector 13%): the rest of the machine is
  the API server and etcd. Its cold time varies more than the floor's (53–88 s
  against 53–60 s in one run, rounds alternating), which no profile of resyncd
  alone explains yet. The machine's own speed moves within a run too: in the
  record of b187c67 at 5,000, each run on a new control plane, the floor took
  49, 73 and 98 s and resyncd 54, 64 and 100 s, round by round, where the run
  before had 96–97 and 107–113 s. The rounds keep each pair on the same footing
  (1.10×, 0.87× and 1.02× round by round); the median of three swings with
  the machine. At N = 1,000 a cold run takes 11–19 s and its ratio swings as
  much: 1.15×, 1.06× and 0.97× round by round in the record of 9ff46d4 (1.12×
  the median, not met), 1.18×, 0.89× and 1.35× in d522d36's (1.18×), 0.95× in
  the scale record of c34f92a.
- **Requests per steady pass** are the LIST pages: ⌈N/500⌉ for the parents and for
  each kind of child that exists, and one for an empty kind.
- **Steady pass time** is the reading: each page is decoded one object at a time as
  it arrives, in one scan of the stream that makes each value as it reads it
  (json-iterator's Iterator); a child unchanged since the last pass is not
  extracted again, and a parent left with nothing to do, unchanged with its
  children, is not rendered again. What is left is the decoding and its garbage,
  on the cores the API server encodes the same pages with. The first pass after a
  start has nothing to remember. At N = 1,000 a steady pass takes 0.2–0.5 s,
  about the server's own time, and the graph's pass against the built-in
  renderer's moves with the machine: in a steady pass neither renders (every
  parent is unchanged, with its children), so both are the same reading of the
  same pages. Round by round 1.23×, 1.37× and 0.81× in the record of 9ff46d4,
  whose medians, 0.24 s against 0.20, miss the target of 1.2× by 0.005; over
  the nine records of ` + "`make bench`" + ` since 2026-11-30 the medians' ratio was
  0.51–1.20×, 0.97× at its median.
- **Peak RSS** of resyncd is a fixed part and a part that grows with the largest
  namespace and, slowly, with the parents.
  - The fixed part, with ten parents, is a figure of its own (The fixed part,
    below: 51 MiB in sync and 12 MiB of heap at commit 9ff46d4, against a target
    of 35; 47 and 13 MiB at d522d36, where the raw LIST beside it had 39 MiB
    against 42 at 9ff46d4). Measured by hand at commit 634f580: 46–47 MiB at its peak and 44–45
    MiB once in sync, of which 13–14 MiB are the Go heap and runtime (7.5 MiB of
    heap in use) and 31–34 MiB pages of the 58 MB executable. The kernel maps a file's pages in
    aligned runs of 64 KiB (fault-around) as soon as one byte of a run is read, and
    /proc/PID/pagemap read against the executable's sections shows each run of
    resyncd's all resident or not at all: once in sync with ten parents, 276 of
    the 305 runs of its code (17.2 of 19.0 MiB), all of its read-only data (6.6
    MiB: type descriptors, strings) and 152 of the 215 runs of the function tables
    the collector and stack traces read (9.5 of 13.4 MiB). This part follows the
    size of what is linked, not of what runs. The largest part of the code is
    k8s.io/api's, 7.1 of 18.4 MiB: all of client-go's 56 API-group packages, which
    every typed client-go client (discovery, leader election, Events, Leases) and
    tier 1's type converter link through client-go's scheme; cel-go with its
    parser and protobuf is the next, 2.2 MiB. A process that links only the
    dynamic client, the typed clients and that registry peaks at 18 MiB doing
    nothing. These pages are clean copies of the file: under memory pressure the
    kernel can drop them and read them again, which it cannot do with the heap,
    and they count in a container's working set
    (` + "`container_memory_working_set_bytes`" + `), not in its anonymous memory
    (` + "`container_memory_rss`" + `). The
    schemas tier 1 reads managedFields with are parsed once, first thing: 25 MB
    allocated, 8 MB of it live at once, so resyncd parses them with the collector
    at a tenth of its pace and returns what it freed at once; they add about 13 MiB
    at their peak, while little else is resident, and 3 MiB for good.
  - A pass reads parents and children side by side, a namespace at a time, in the
    order the API server stores them, so it holds the children of one namespace
    and about a page of parents. A child held is about 1 KiB live: 248 bytes as
    the pass reduced it (identity, the fingerprint of tier 1, its status; what few
    children have, such as the fields a graph reads or the diff's whole object,
    behind one pointer), its name, UID and resourceVersion, and its entries in
    the window's maps; its kind, group, namespace, resource and controller's
    kind are one copy the process shares. With all N parents in one namespace the pass holds them all, which
    is the bound: memory grows with the largest namespace. At 5,000 parents in
    one namespace, commit cf87ae5
    ([` + "`bench/results/2026-12-03-memory-20000-cf87ae5.json`" + `](../bench/results/2026-12-03-memory-20000-cf87ae5.json)),
    the heap the collector found live was 16–18 MiB against 7–8 over 50
    namespaces, and the in-sync RSS 75 MiB, 1.08× the raw LIST (90 MiB, 1.33×,
    in the scale record of 2026-12-02); in the scale record of 2026-12-04,
    commit c34f92a, 74 MiB against the raw LIST's 77, 0.96×. Kinds a graph may place in another
    namespace than the parent's are read first and held through the pass.
  - A parent with work is held, with its children, until its job runs: the parent
    as S2-compressed JSON, compressed against a dictionary that is the first
    parent the pass packed (about 75 bytes for the bench's HttpService, 757
    without the dictionary, 1,408 as JSON), decoded again by the worker that
    runs the job; its children as the pass reduced them; what it will write;
    and the job itself, 408 bytes, with what few jobs have (dry-runs, children
    held, refused or waiting, external references) behind one pointer. Once
    its job has run, the pass keeps only what fold reads: what its writes came
    to and what they teach the next pass. That is 2.0–2.2 KiB a job of a
    drifted parent at commit 6e52db3, against 2.9–3.0 KiB at 301ccd4 and
    3.9–4.0 KiB at 8ec6b44
    (` + "`go test -run '^$' -bench PassMemory ./engine`" + `, B/job-held once every job is
    planned, before the first runs: in memory, no API server, the bench's
    HttpService). The drift figure, 5% of the children changed, gives about a
    tenth of the parents a job, so the drift pass holds about 0.3 KiB a parent
    more at the start of its writes than a steady pass. **That is what bounds the
    in-sync heap peak at N = 20,000.** resyncd alone at 5,000 and 20,000 at commit
    6e52db3, the jobs smaller and packed against the pass's dictionary
    ([` + "`bench/results/2026-12-03-memory-20000-6e52db3.json`" + `](../bench/results/2026-12-03-memory-20000-6e52db3.json)),
    had 56 and 73 MiB in sync, 0.84× and 1.07× the raw LIST (66 and 68 MiB in
    that run), 1.19 KiB a parent between them (9979366
    ([` + "`bench/results/2026-12-03-memory-20000-9979366.json`" + `](../bench/results/2026-12-03-memory-20000-9979366.json)):
    55 and 75 MiB, 0.77× and 1.02× against 72 and 73, 1.31 KiB; 301ccd4: 56 and
    79 MiB, 1.57 KiB; f67432a: 60 and 86 MiB, 1.8 KiB). At 20,000 the heap
    found live (gctrace, split at each pass's log line) was 15–16 MiB in the
    drift passes and 10–12 MiB in the others; the heap peaked at 27–28 MiB in
    the drift passes against 20–24 (9979366: 18–19 and 11–12 MiB live, 32–34
    and 20–23 peak). That peak heap is below the raw LIST's, 31 MiB: what
    keeps resyncd's RSS above the raw LIST's at 20,000 is the rest of the
    process, 45 MiB of its 73 against 37 of the raw LIST's 68: mostly the
    executable's pages and the runtime of the fixed part above. The raw LIST's
    own peak moved by 5 MiB between the two records, as much as the gap. In
    the scale record of 2026-12-04, commit c34f92a
    ([` + "`bench/results/2026-12-04-scale.json`" + `](../bench/results/2026-12-04-scale.json)),
    resyncd had 55 and 71 MiB in sync at 5,000 and 20,000 (heap 14 and 29
    MiB) against the raw LIST's 77 and 75 (heap 33 and 30), 0.71× and 0.95×,
    1.15 KiB a parent between them: within the target at 20,000 by 4 MiB,
    less than the raw LIST's own peak moved between the scale records (69
    MiB at 20,000 in 2026-12-02's, 75 in this one). The cold process, every parent a job, peaked at 105 MiB at
    20,000, against 130 at 9979366 and 301ccd4 and 174 at cf87ae5, whose jobs
    held their children, refreshed, until the pass ended.
  - Between passes it keeps, per child and per idle parent, a 128-bit hash of the
    UID and resourceVersion with a 128-bit fingerprint and a few flags, no
    strings: 40 bytes a child, and 24 for an idle parent beside the 40 of each
    child it compared. They are packed in arrays sorted by that hash and found
    by binary search; what a pass finds new waits in a small map until the
    pass's end merges it in, and a pass stamps what it read again rather than
    holding two copies. That is about 256 bytes a parent of two children at
    9979366, the drift pass's memory of its repairs included (B/parent-kept),
    against 449 in Go maps, which hold their entries half to seven eighths
    full, with each idle parent's children in an allocation of their own.
  - The Go collector lets the heap grow to twice what is live before it runs (GOGC
    100): the fixed part's heap, what is kept between passes and the jobs ahead of
    the writes all count about twice in peak heap. The raw LIST process, which
    holds no state at all, is the yardstick for what reading costs; its memory
    stays flat with N. controller-runtime holds a
    typed copy of every HttpService, Deployment and Service in the cluster, so its
    memory grows with the cluster, not with what it manages. With
    ` + "`driftCheck: server`" + ` every parent waits for its dry-runs, so the pass
    holds them all.
- **Drift** is repaired with exactly one apply per drifted child; resyncd also
  writes ` + "`status.lastAppliedTime`" + ` of each parent whose child it repaired.
- **Unrelated objects** cost resyncd nothing but the server's filtering: its LISTs
  carry its label selector, so neither requests nor bytes nor memory change.
  controller-runtime's informers LIST and hold every Deployment and Service, so
  its bytes and memory grow with them. resyncd's peak among them is its peak in
  sync, most of it the fixed part: 54 MiB in the record of 9ff46d4 against
  controller-runtime's 145, 0.37×. A third of 145 is 48 MiB, less than the fixed
  part's 51 alone: the target is 0.4×, and the fixed part bounds it near a third.
- **The server's cost over time**: a quiet watch costs the server almost nothing;
  a pass costs it the LIST pages of every parent and child each interval, so the
  cost of polling is the cost of a pass times the passes an hour, and a pass's
  cost grows with N. What a watch-based controller costs comes with change (an
  event for every change to any object of its kinds, unrelated ones included) and
  at every start (a LIST of all of them), which a quiet window does not show.
- **Graph depth** costs no pass where every reference is filled by what the API
  server returns as it stores a child (names, uids, a Service's clusterIP): a job
  writes one parent's children one after another, in dependency order, and renders
  the parent again from the answer to each write another child reads, so the children
  waiting for it are written in the same job. Both graphs make 5N writes (four
  children and a status a parent), so the chain's cost is its renders again. Fields
  another controller fills later (a Deployment's ` + "`status.availableReplicas`" + `) would
  wait for a later pass; none runs here.
- **Replicas sharing the work** each LIST their share: the requests stay the same
  (⌈share/500⌉ pages a collection, at least one), the objects fall with the
  share. Bytes are what the server sent on the wire, and it gzips only a response
  of more than 128 KiB: a replica's LIST of a few dozen Deployments or Services goes
  out uncompressed, so at small N (200) a replica of three receives more bytes than
  one replica of all; from pages of a few hundred objects on, every response is
  gzipped, and a replica's bytes follow its share. A replica's memory keeps the
  fixed part of a process (about 50 MiB) and the part that grows with its share.
- **Drift latency** under resyncd is the wait for the next pass (uniform over the
  interval) plus the pass: half an interval at the median, an interval at the
  most. Under a watch it is the event's delivery and one reconcile.
- **Under churn** resyncd's cost does not move: its LISTs carry its label selector,
  so the server filters the unrelated Deployments out of every page, and it sees
  none of their writes. A watch on Deployments receives every write to every
  Deployment as an event, which the server encodes and sends and the controller
  decodes, caches and filters: its CPU, the server's CPU and the bytes sent grow
  with the rate of change of objects it does not manage.
- **Against kro**, the targets a record leaves unmet are bound by what each design
  costs while nothing changes, and by what a pass costs the server against a watch's
  events when passes come often:
  - *Peak RSS ≤ 0.5× kro's* asks resyncd for less than half of what kro holds.
    resyncd's peak is its fixed part (46–48 MiB at N = 10: the runtime, client-go's
    typed clients, leader election, events, metrics) and a part that grows with the
    largest namespace; kro's is a fixed part of its own and its informers' caches of
    every child kind, which grow with the cluster. In the record of b5f3beb at N =
    1,000, resyncd peaked at 60 MiB and kro at 113 (under churn, its Deployment
    informer holding the 4,000 unrelated Deployments too; 90 after its cold run):
    half of 113 is 57 MiB, less than 10 MiB above resyncd's fixed part. The target
    holds where kro holds more than twice resyncd's fixed part and growth: at
    5,000, in the record of 37c5c76, 87 MiB against kro's 323, 0.27×.
  - *The API server's CPU in the quiet window, resyncd at 3m, ≤ kro's*: a quiet
    watch costs the server almost nothing, so kro's figure is close to an idle
    plane's; resyncd's adds its passes, and a 3-minute window at a 3-minute
    interval holds one. At 1,000 a pass costs the server about 0.2–0.3 CPU seconds
    on top of idle: in the record of b5f3beb the window gave 3.84 s against kro's
    3.64, within the few percent by which idle planes differ. At 5,000 a pass, about
    51 LIST pages of 5,000 parents and 20,000 children, costs 4.5–8 CPU seconds (the
    window at 3m against kro's; the 30s window's five more passes) on top of an idle
    plane's 11 s in 3 minutes: in the record of 37c5c76, 16.36 s against 11.82,
    1.38×. That is 25 times the cost of a pass at 1,000 for 5 times the objects,
    more than the objects alone explain; the bench does not profile the server to
    say where it goes. Polling cannot cost the server less than a quiet watch; it
    costs less under change (the churn rows at 3m).
  - *Bytes sent an hour, quiet, resyncd at 3m, ≤ kro's*: a quiet watch receives no
    event, so kro's informers receive almost nothing; what the window counts on
    kro's plane is the API server's own LIST of every Service (its ClusterIP repair
    loop, above): 1.35 MB at 1,000 and 6.76 MB at 5,000, the same for tuned kro. A
    pass receives every parent and child once an interval, gzipped (130–150 bytes
    an object): 0.75 MB a pass at 1,000, 3.2 MB at 5,000, on top of the server's
    LIST on resyncd's plane. No polling design meets this target against a quiet
    watch. It held at 1,000 (0.77× in the record of b5f3beb) only because kro's six
    new watches in that window received 1.4 MB; against tuned kro's window, with
    none, it was 1.56×. At 5,000 it was 1.48× (the record of 37c5c76).
  - *Under churn at 30s*: the window at 3m held no pass, so its 23.42 s in 66 s is
    what the churn's 43 writes a second cost the server at 5,000, about 8 ms a
    write. Taking that away at each window's own rate of writes, kro's watches and
    reconciles cost the server 12.0 s in 68 s (10.5 s a minute at 40 writes a
    second), and resyncd's two passes 16.7 s in 63 s (about 8 s a pass, as in the
    quiet window): 1.05× in all. A pass costs the server about what 45–50 s of kro's
    events cost at this rate, so at 5,000 an interval shorter than that costs the
    server more than kro's watches; at 1,000, where a pass costs a twenty-fifth as
    much, 30s met the target (0.77×). resyncd's own CPU is about 2.0 s a pass at
    5,000 (reading and comparing 25,000 objects; 12.19 s for 6 passes quiet), so two
    passes gave 4.04 s against kro's 5.02, 0.80×: ≤ 0.5× wants one pass a minute
    or fewer at this N. At 3m both targets are met (0.67× and 0.00×).

`
