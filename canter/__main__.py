"""``python -m canter`` is the ``canter`` command, and :func:`entry` the console script's entry point."""
import sys


def entry() -> None:
    """Run :func:`canter.cli.entry`; a Ctrl-C while its module imports is one line and exit code 130.

    Only ``sys`` is imported before the ``try``: a Ctrl-C after the interpreter started is answered
    here, or by the command (torch and the rest import when a command needs them)."""
    try:
        from canter.cli import entry as cli_entry
    except KeyboardInterrupt:
        from canter.errors import interrupted

        sys.exit(interrupted())
    cli_entry()


if __name__ == "__main__":
    entry()
