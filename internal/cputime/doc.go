// Package cputime reads the CPU time of the running process: the worker's
// idle collector tells load from quiet with it, and the load generator
// reports what measuring took from the machine.
package cputime
