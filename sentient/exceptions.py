"""Every error Sentient raises on purpose.

The tree::

    SentientError
    ├── ConfigError               invalid YAML, unknown agent/profile, bad setting
    │   ├── ProfileNotFoundError  a profile name that does not exist (lists the valid ones)
    │   └── InvalidGoalError      a goal that is not valid text (also a ValueError)
    ├── AgentError                an agent call that did not produce a usable result
    │   ├── AgentOutputError      output still invalid after the validation retries
    │   ├── AgentTimeoutError     the call ran past its timeout (per attempt, or the call's deadline)
    │   ├── BudgetExhaustedError  a request refused because a budget of the run is spent
    │   ├── ProviderLimitsError   the shared provider limits (Redis) failed mid-call (retried)
    │   └── ModelError            the model itself failed (provider error, injected failure)
    │       ├── ModelWeightsError missing or corrupt GGUF weights
    │       └── MalformedResponseError  HTTP 200 without a usable completion (retried)
    ├── GraphError                a misuse of the task graph (a bug, not a run condition)
    │   └── IllegalTransitionError
    ├── ToolError                 a tool could not run
    │   ├── DocsFolderError       the documents folder is missing or has nothing to index
    │   └── EmbeddingModelError   the docs embedding model cannot be loaded (search falls back to BM25)
    ├── RunError                  the run as a whole could not finish
    ├── ExportError               a report format this machine cannot produce (names what to install)
    └── EvalError                 an evaluation dataset that cannot be read (names file and line)

Exceptions carry data and never log. Recoverable failures during a run (an agent error on one
node) are recorded on the node; they do not propagate out of the engine.
"""

from __future__ import annotations


class SentientError(Exception):
    """Base class for all Sentient errors."""


class ConfigError(SentientError):
    """Configuration that cannot be used.

    Attributes:
        file: the file that holds the problem, if any.
        field: dotted path of the offending field, if known.
        fix: one sentence telling the user what to do.
    """

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None, fix: str | None = None):
        self.message = message
        self.file = file
        self.field = field
        self.fix = fix
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.field:
                where += f", field '{self.field}'"
            where += ": "
        elif self.field:
            where = f"field '{self.field}': "
        text = f"{where}{self.message}"
        if self.fix:
            text += f" Fix: {self.fix}"
        return text


class InvalidGoalError(ConfigError, ValueError):
    """A goal that cannot be researched as given (empty, or not valid Unicode text)."""

    def __init__(self, message: str, *, fix: str | None = "pass the goal as valid UTF-8 text."):
        super().__init__(message, field="goal", fix=fix)


class ProfileNotFoundError(ConfigError):
    """A profile name that is not among the available profiles."""

    def __init__(self, name: str, available: list[str], *, file: str | None = None):
        self.name = name
        self.available = available
        super().__init__(
            f"unknown profile '{name}'.",
            file=file,
            fix=f"use one of: {', '.join(available) or '(none found)'}.",
        )


class AgentError(SentientError):
    """An agent call failed; recorded on the node that made it."""

    def __init__(self, message: str, *, agent: str | None = None, task_id: str | None = None):
        self.agent = agent
        self.task_id = task_id
        super().__init__(message)


class AgentOutputError(AgentError):
    """The agent's output did not validate against its schema after all retries."""

    def __init__(self, message: str, *, attempts: int, agent: str | None = None, task_id: str | None = None):
        self.attempts = attempts
        super().__init__(message, agent=agent, task_id=task_id)


class AgentTimeoutError(AgentError):
    """The agent call ran longer than its timeout (``detail`` says which one, when not the attempt's)."""

    def __init__(
        self, timeout_s: float, *, agent: str | None = None, task_id: str | None = None, detail: str | None = None
    ):
        self.timeout_s = timeout_s
        super().__init__(detail or f"agent call timed out after {timeout_s:g}s", agent=agent, task_id=task_id)


class BudgetExhaustedError(AgentError):
    """A model request was refused before it was sent: a cost or call budget of the run is spent."""


class ProviderLimitsError(AgentError):
    """The provider limits shared through Redis could not be consulted (Redis went away or timed
    out) while a call waited for them. Transient: the call is retried like a connection error.

    Attributes:
        where: the Redis URL, without its password.
    """

    def __init__(self, message: str, *, where: str):
        self.where = where
        super().__init__(message)


class ModelError(AgentError):
    """The model (provider, embedded runtime or fake) raised an error."""


class ModelWeightsError(ModelError):
    """The GGUF weights are missing, incomplete or do not match their checksum."""


class MalformedResponseError(ModelError):
    """The provider answered (HTTP 200) without a usable completion: an empty or missing ``choices``
    list, a choice without its message, or a body that is not JSON. Transient: it is retried."""


class GraphError(SentientError):
    """Misuse of the task graph: a programming error, not a run condition."""


class IllegalTransitionError(GraphError):
    """A status change that the transition table does not allow."""

    def __init__(self, task_id: str, current: object, target: object):
        self.task_id = task_id
        self.current = current
        self.target = target
        super().__init__(f"task {task_id}: illegal transition {current} -> {target}")


class ToolError(SentientError):
    """A tool could not run."""


class DocsFolderError(ToolError):
    """The documents folder given to the docs search tool cannot be used."""


class EmbeddingModelError(ToolError):
    """The embedding model for hybrid docs search is missing or cannot be loaded."""


class RunError(SentientError):
    """The run as a whole could not complete."""


class ExportError(SentientError):
    """A report cannot be written in a format because the machine lacks what that format needs.

    Attributes:
        format: the format asked for (``pdf``…).
        fix: one sentence telling the user what to install.
    """

    def __init__(self, format: str, message: str, *, fix: str):
        self.format = format
        self.fix = fix
        super().__init__(f"cannot write {format}: {message}. Fix: {fix}.")


class EvalError(SentientError):
    """An evaluation dataset (or its options) that cannot be used.

    Attributes:
        file: the dataset file.
        line: the 1-based line (JSONL) or row (CSV, header = 1) that holds the problem, if any.
    """

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None):
        self.message = message
        self.file = file
        self.line = line
        where = f"{file}, line {line}: " if file and line else f"{file}: " if file else ""
        super().__init__(f"{where}{message}")
