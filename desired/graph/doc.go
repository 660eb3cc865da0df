// Package graph makes a desired.Renderer of a graph file: a parent kind's
// children declared as templates with CEL expressions, in the format of
// kro's ResourceGraphDefinition. It compiles and checks every expression
// when the file is loaded and bounds what evaluating them may cost; it
// never talks to a cluster (the schemas it checks types against are given
// to it).
package graph
