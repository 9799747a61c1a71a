"""The Sentient server: REST API, Socket.IO live updates and plan review over the engine.

``create_app(ServerSettings(...))`` builds it; ``sentient serve`` runs it with gunicorn.
See ``docs/server-protocol.md`` for the protocol.
"""

from importlib.metadata import PackageNotFoundError, version

from .app import Services, create_app, shutdown
from .config import ServerSettings

try:
    __version__ = version("sentient")
except PackageNotFoundError:  # running from a checkout
    __version__ = "0.0.0"

__all__ = ["ServerSettings", "Services", "__version__", "create_app", "shutdown"]
