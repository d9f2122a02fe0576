"""``python -m canter`` is the ``canter`` command."""
from canter.cli import entry

entry()
