"""Where the files shipped beside the code are, in an installed wheel and in a source checkout.

The repository keeps ``agent_configs/`` and the built dashboard (``dashboard/dist/``) at its top
level. A wheel carries them inside the packages that read them, as ``sentient/_data/agent_configs``
and ``sentient_server/_data/dashboard`` (the ``[tool.setuptools]`` tables of ``pyproject.toml``
map them there). A checkout, or an editable install of one, has no ``_data`` folder: the files are
read from the repository itself, so an edit to a profile takes effect without reinstalling.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def bundled_dir(package: str, installed: str, checkout: str) -> Path:
    """A folder shipped with ``package``.

    Args:
        package: the import name of the package that ships the folder.
        installed: the folder's path inside the installed package.
        checkout: the folder's path from the repository root, beside the package's source folder.
    """
    root = Path(str(files(package)))
    inside = root / installed
    return inside if inside.is_dir() else root.parent / checkout


def agent_configs_dir() -> Path:
    """The shipped ``agents.yaml``, ``models.yaml`` and ``profiles/``."""
    return bundled_dir("sentient", "_data/agent_configs", "agent_configs")
