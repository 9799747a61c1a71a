"""Grammar-constrained sampling that checks the grammar on the likely tokens first.

llama-cpp-python samples through one llama.cpp chain: repetition penalties, then the grammar,
then top-k, typical, top-p, min-p, temperature and the seeded draw. The grammar step matches
every token of the vocabulary (152k for Qwen) against the grammar at every step: about 25 ms
per generated token on a 2-core VM, a third of the time each token takes (bench/sampling_bench.py).

:class:`LikelyFirstSampler` gives the same tokens, cheaper. After the penalties, top-k keeps the
``top_k`` highest-scoring tokens the grammar allows. Those are all among the ``CANDIDATES``
highest-scoring tokens whenever at least ``top_k`` of these are allowed, so the grammar is
checked on those first, and the rest of the chain runs on them. Where fewer are allowed (the
JSON punctuation between values, where few tokens fit), it checks the whole vocabulary, as the
chain does. Same candidates, same order, same seeded draw: the same reply. At temperature 0 the
chain ends in a greedy pick instead, the best allowed token, so one allowed candidate is enough.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp._internals import LlamaContext
    from llama_cpp.llama_grammar import LlamaGrammar

CANDIDATES = 256  # tokens checked against the grammar first; the whole vocabulary when too few pass
# The sampling parameters of ``Llama._init_sampler`` that this sampler takes over.
LIKELY_FIRST_PARAMETERS = (
    "top_k",
    "typical_p",
    "top_p",
    "min_p",
    "temp",
    "repeat_penalty",
    "frequency_penalty",
    "presence_penalty",
)


class LikelyFirstSampler:
    """The sampler ``Llama._init_sampler`` builds for a grammar and a temperature of zero or more,
    checking the grammar on the likely tokens first (see the module docstring).

    It has the interface ``Llama`` uses: ``sample(ctx, idx)`` returns the token and accepts it.
    """

    def __init__(
        self,
        llama: Llama,
        grammar: LlamaGrammar,
        *,
        top_k: int,
        typical_p: float,
        top_p: float,
        min_p: float,
        temp: float,
        repeat_penalty: float,
        frequency_penalty: float,
        presence_penalty: float,
    ) -> None:
        from llama_cpp._internals import LlamaSampler, LlamaTokenDataArray

        self._n_vocab = llama.n_vocab()
        self._top_k = top_k
        # Three chains where llama-cpp-python has one, with the same samplers and parameters.
        self._penalties = LlamaSampler()
        self._penalties.add_penalties(
            n_vocab=self._n_vocab,
            penalty_last_n=llama.last_n_tokens_size,
            penalty_repeat=repeat_penalty,
            penalty_freq=frequency_penalty,
            penalty_present=presence_penalty,
        )
        self._grammar = LlamaSampler()
        self._grammar.add_grammar(llama._model, grammar)
        self._rest = LlamaSampler()
        if temp <= 0.0:  # greedy, as llama-cpp-python samples at temperature 0: the best allowed token
            self._top_k = 1
            self._rest.add_greedy()
        else:
            self._rest.add_top_k(top_k)
            self._rest.add_typical(typical_p, 1)
            self._rest.add_top_p(top_p, 1)
            self._rest.add_min_p(min_p, 1)
            self._rest.add_temp(temp)
            self._rest.add_dist(llama._seed)
        self._all = LlamaTokenDataArray(n_vocab=self._n_vocab)
        self._likely = LlamaTokenDataArray(n_vocab=min(CANDIDATES, self._n_vocab))

    def sample(self, ctx: LlamaContext, idx: int = -1) -> int:
        import llama_cpp

        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx.ctx, idx), shape=(self._n_vocab,))
        everything = self._all
        everything.copy_logits(logits)
        self._apply(self._penalties, everything)
        likely = self._likely
        size = likely.n_vocab
        scores = everything.candidates_data.logit
        best = np.argpartition(-scores, size - 1)[:size] if size < self._n_vocab else np.arange(size)
        best = best[np.argsort(-scores[best], kind="stable")]
        likely.candidates_data.id[:] = best
        likely.candidates_data.logit[:] = scores[best]
        likely.candidates_data.p[:] = 0.0
        likely.candidates.sorted = False
        likely.candidates.size = size
        self._apply(self._grammar, likely)
        chosen = likely
        if np.isfinite(likely.candidates_data.logit).sum() < self._top_k:  # too few fit: check them all
            self._apply(self._grammar, everything)
            chosen = everything
        self._apply(self._rest, chosen)
        token = int(chosen.candidates_data.id[chosen.candidates.selected])
        for sampler in (self._penalties, self._grammar, self._rest):
            sampler.accept(token)
        return token

    @staticmethod
    def _apply(sampler: object, candidates: object) -> None:
        import llama_cpp

        llama_cpp.llama_sampler_apply(sampler.sampler, ctypes.byref(candidates.candidates))  # type: ignore[attr-defined]
