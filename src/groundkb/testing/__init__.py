"""Test support shipped with groundkb: the store conformance suite any backend subclasses
(:mod:`groundkb.testing.conformance`) and a local PostgreSQL server with pgvector for
tests, benchmarks and trying groundkb (:mod:`groundkb.testing.postgres`)."""
