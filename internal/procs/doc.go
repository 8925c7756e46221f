// Package procs starts, probes and stops the long-running child processes
// benchq manages on the local machine: the systems under test, the results
// database and the stack's own services.
//
// Processes are started detached (own session) so that they outlive their
// starter: a restarted deployer must find its SUTs still running and be able
// to stop them by the pid it recorded.
package procs
