"""Registers the ``audit`` table producer with the runner (simulator.runner imports this module
at its end; see simulator.audit.section). It is registered per sweep point: each point's audit
is its own unit of work (own seed, spread over workers, resumable)."""

from __future__ import annotations

from simulator.audit.section import TABLE, produce
from simulator.runner import register_table_producer

register_table_producer(TABLE, produce, per_point=True)
