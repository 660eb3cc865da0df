// Package engine runs resyncd's passes: it compares the children that
// package desired renders with the live ones that package actual reads,
// plans the writes by priority and makes them with server-side apply under
// a rate limit and a budget; it never decides what a child should contain.
//
// A pass is plan → write → fold (pass.go). plan.go turns the pages read
// (through a pageReader, cluster.go) and the memory of the last pass
// (memory.go) into jobs (job.go), one per parent with something to do:
// planparent.go decides what a parent needs (idle as last left, rendered,
// stalled, its prunes), planchild.go what each rendered child needs, and
// drift.go books the drift found into the report and the metrics.
// write.go runs each job on one of the scheduler's workers
// (scheduler.go), through an objectWriter: its child writes in graph order
// (rendering the parent again from what a write returned, replan.go), its
// status, its prunes; a job books what its writes came to as outcomes and
// what they teach as lessons, and touches nothing else. fold then turns the
// outcomes into the pass's report and the lessons into the next memory.
// livechild.go is what a pass keeps of a LISTed child; managedfields.go
// reads the fields resyncd's field manager owns; ownership.go decides
// whose a child is; render.go stamps the renderer's children.
//
// The objectWriter and pageReader let the planner, the scheduler and fold
// be tested in memory; the package's other tests start an API server.
package engine
