"""The engine: event-driven scheduling and the per-phase node processor."""
