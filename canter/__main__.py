"""``python -m canter`` is the ``canter`` command."""
from canter.cli import main

raise SystemExit(main())
