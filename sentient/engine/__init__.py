"""The engine: event-driven scheduling of a task graph, and the processor protocol it drives."""
