"""Process-wide memory settings for a process that runs projects (``sentient run``, ``serve``, ``worker``)."""

from __future__ import annotations

import atexit
import gc


def freeze_startup_objects() -> None:
    """Leave everything allocated so far (imported modules, classes, settings) out of later
    garbage collections.

    A process that runs projects keeps what it imported until it exits, yet every full collection
    of the cyclic garbage collector walks it again, and a large run triggers several: on the
    engine bench's 11,111-node tree they took 1.86 s of the run, 0.82 s with these objects frozen
    (bench/README.md). ``gc.freeze`` moves them to the permanent generation; what runs allocate
    afterwards is collected as before. Call it once, after start-up, from the code that owns the process:
    a library call must not change its host's collector.
    """
    gc.collect()  # garbage of the start-up is freed, not frozen
    gc.freeze()
    # At exit they are collectable again, so they are finalized before the interpreter clears the
    # modules their finalizers use (llama.cpp's model printed a traceback at every exit otherwise).
    atexit.unregister(gc.unfreeze)  # once, however often it is called
    atexit.register(gc.unfreeze)
