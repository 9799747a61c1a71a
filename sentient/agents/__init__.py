"""Agents: YAML configuration, registry, prompts, structured outputs and the runner."""
