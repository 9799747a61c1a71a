"""Agents: YAML configuration, registry, prompts, structured outputs, the runner, and the
processor that runs the phases of a node with them (the engine drives it through its protocol)."""
