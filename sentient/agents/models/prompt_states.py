"""Prompt states: the embedded model reads only the part of a prompt it has not read before.

llama.cpp keeps the KV cache of the last prompt it read, and a call that starts with the same
tokens reads only the rest. But the agents of a run take turns (atomizer, executor, atomizer,
executor …), so each call started with another agent's system prompt and read its own again,
every time. The runtime keeps the state after each of the last few calls
(:func:`prompt_states`), and a call starts from the one that shares the longest prefix with its
prompt: the chat template's system turn with the agent's instructions, and whatever else the
agent's prompts share.

The states are llama-cpp-python's own prompt cache (``Llama.set_cache``) with two changes:
- :func:`save` keeps the KV cache and tokens but not the logits. The library copies them (up to
  512 x 152k floats for Qwen, 300 MB, per state) although they are not kept without ``logits_all``,
  and a restored state is decoded again before sampling (its last token at least).
- :func:`load` restores the same, without zeroing the logits buffer (another 300 MB pass).
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaState
    from llama_cpp.llama_cache import BaseLlamaCache

# About 1,000 prompt tokens take 28 MB of the 1.5B's KV cache: room for a state per agent.
CAPACITY_BYTES = 256 << 20


def prompt_states(capacity_bytes: int = CAPACITY_BYTES) -> BaseLlamaCache:
    """A least-recently-used store of states by prompt tokens (llama-cpp-python's RAM cache),
    for ``Llama.set_cache``."""
    from llama_cpp import LlamaRAMCache

    return LlamaRAMCache(capacity_bytes=capacity_bytes)


def save(llama: Llama) -> LlamaState:
    """The model's KV cache and the tokens it holds."""
    import llama_cpp
    from llama_cpp import LlamaState

    ctx = llama._ctx.ctx
    size = llama_cpp.llama_state_get_size(ctx)
    buffer = (ctypes.c_uint8 * size)()
    written = int(llama_cpp.llama_state_get_data(ctx, buffer, size))
    if written > size:
        raise RuntimeError("llama.cpp wrote more state than it said it would")
    return LlamaState(
        input_ids=llama.input_ids.copy(),
        scores=np.empty((0, 0), dtype=np.single),
        n_tokens=llama.n_tokens,
        llama_state=ctypes.string_at(buffer, written),  # one copy of what was written
        llama_state_size=written,
        seed=llama._seed,
    )


def load(llama: Llama, state: LlamaState) -> None:
    """Restore a state :func:`save` made; the next call decodes at least one token before it samples."""
    import llama_cpp

    buffer = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
    if llama_cpp.llama_state_set_data(llama._ctx.ctx, buffer, state.llama_state_size) != state.llama_state_size:
        raise RuntimeError("llama.cpp could not restore a saved prompt state")
    llama.input_ids = state.input_ids.copy()
    llama.n_tokens = state.n_tokens
    llama._requires_eval = True
    llama._seed = state.seed
