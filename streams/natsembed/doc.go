// Package natsembed runs a NATS server with JetStream inside a process, for
// a worker or a test that brings its own broker: Start with a Config
// (listen address, store directory, authentication, per-tenant accounts
// from a tenants file), and Connection to reach it the fastest way. It is
// the only package of convstream that imports nats-server.
package natsembed
