package main

// docIntro opens docs/benchmarks.md; the figures follow it.
const docIntro = `# Benchmarks

` + "`make bench`" + ` measures resyncd side by side with the alternatives a platform team
weighs it against, on one local control plane, in one run. Figures are ratios to a
contender measured in the same run, never absolute targets: timings on another
machine differ, ratios much less. ` + "`make test`" + ` never asserts a timing.

This file is written by the bench (` + "`bench/`" + `); the raw samples are in
` + "`bench/results/`" + `.

## What runs

- **The control plane**: etcd and kube-apiserver from ` + "`make bins`" + `, on loopback, with
  ` + "`--max-requests-inflight=3000`" + ` and ` + "`--max-mutating-requests-inflight=1000`" + ` so that the
  server's CPU, not its throttling, is the limit, and a /16 Service range. No
  controller runs: Deployments are stored, never rolled out, so statuses do not
  move once written.
- **The load**: N HttpServices, 100 per namespace, each a web service with an
  image, two replicas, two environment variables, requests and limits, and a
  health check, so two children each (Deployment and Service).
- **The contenders**, each its own process, one at a time, against the same
  objects:
  - **resyncd**: ` + "`resyncd once`" + ` with the default configuration
    (` + "`driftCheck: local`" + `, ` + "`pageSize: 500`" + `, ` + "`apply.concurrency: 8`" + `) but for
    ` + "`apply.qps`" + `, ` + "`apply.burst`" + ` and ` + "`apply.maxWritesPerPass`" + `, lifted so that the
    server is the limit. With the defaults (50 writes/s, 2,000 writes a pass), cold
    convergence of N parents takes about 3N/50 seconds and ⌈3N/2000⌉ passes.
  - **resyncd, driftCheck server**: the same, with a server-side dry-run of every
    child each pass, the strategy GitOps tools use.
  - **controller-runtime**: the reconciler a team would write: typed API structs,
    ` + "`For(HttpService).Owns(Deployment).Owns(Service)`" + `, ` + "`CreateOrUpdate`" + ` of
    both children setting each field it owns (so that defaults compare equal), and
    ` + "`Status().Update`" + ` only when the status differs; the manager's default settings
    (one worker, caches of every HttpService, Deployment and Service in the
    cluster, no client-side rate limit).
  - **raw-SSA floor**: one paged LIST of the parents, then exactly the applies
    resyncd makes on a cold start (every child, then the status) with resyncd's
    concurrency (8), no reading of children, no comparing, no rate limit: what this
    machine's API server can take.
  - **raw paged LIST**: the parents and resyncd's children (its label selector)
    read through client-go's dynamic client and pager with its defaults (500 a
    page), and thrown away.

## How each figure is made

Each repetition starts from N new HttpServices with no child and no status, and
runs each contender in turn (the order rotates between repetitions):

1. **Cold**: the contender converges the cluster. Time is wall time from exec to
   exit, or, for controller-runtime, to its own report that every parent was
   reconciled without error. The bench then checks that every child exists and
   every status carries the current observedGeneration.
2. **Steady**: the contender runs again on the converged cluster: one pass for
   resyncd; for controller-runtime a restart, until every parent is reconciled
   again (what a resync or a new leader costs it). The raw LIST runs here too. The
   "seconds" column is what the process timed itself: resyncd's pass duration, the
   LIST loop, controller-runtime's start to reconciled.
3. **Drift**: 5% of the children, picked at random, are changed by another field
   manager, as ` + "`kubectl scale`" + ` or an edit would; then the contender runs once, and
   resyncd once more. The bench reads back every drifted child.

Requests and bytes come from the API server's own metrics
(` + "`apiserver_request_total`" + `, ` + "`apiserver_response_sizes`" + `), scraped before and after
each run and restricted to the four collections the contenders use, so the
server's own traffic is left out (so is discovery, a few requests at each process
start). Watch streams have no response size: controller-runtime's bytes exclude
its watch events. Peak RSS is the process's maximum resident set (getrusage).

`
