"""Weights & Biases logging (the ``wandb`` extra). Offline unless ``WANDB_MODE`` says otherwise."""
from __future__ import annotations

import os
import re
import secrets
from pathlib import Path
from types import ModuleType
from typing import Any

from canter.errors import CanterError, MissingExtraError, require
from canter.logging.base import made_by_stop, scalars
from canter.logging.wandb_store import held_step
from canter.trainers.base import TrainRecord

#: the oldest wandb that takes what :meth:`WandbLogger.start` passes: ``reinit="create_new"`` (wandb 0.19.10)
#: and the ``x_disable_stats`` setting
MIN_WANDB = (0, 19, 10)


#: the way on that a resumed run's W&B error names (``--resume`` takes ``--no-wandb``, and was not given ``--wandb``)
RESUME_WITHOUT = ", or resume without W&B: --no-wandb (Python: wandb=False)"


def require_wandb(resumed: bool = False) -> ModuleType:
    """Import wandb, or a one-line :class:`~canter.errors.CanterError` when it is missing or older than
    :data:`MIN_WANDB` (which failed only when training started, inside ``wandb.init``). ``resumed``: a resumed run,
    which logs to W&B as its config says (it need not be given ``--wandb``), and may go on without it."""
    feature, tail = ("this run logs to W&B (wandb: true), which", RESUME_WITHOUT) if resumed else ("--wandb", "")
    try:
        wandb = require("wandb", "wandb", "--wandb")
    except MissingExtraError as exc:
        if not resumed:
            raise
        raise MissingExtraError(feature, "wandb", "wandb", tail=tail) from exc
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", str(getattr(wandb, "__version__", "")))
    if found and tuple(map(int, found.groups())) < MIN_WANDB:  # (a resumed run's too: it was '--wandb needs ...')
        raise CanterError(f"{feature} needs wandb>={'.'.join(map(str, MIN_WANDB))}, found {wandb.__version__}; "
                          f"upgrade it with: pip install -U 'canter[wandb]'{tail}")
    return wandb


#: the modes ``wandb.init`` takes (``WANDB_MODE``; canter's default is offline)
MODES = ("offline", "online", "disabled", "dryrun", "run", "shared")


def wandb_mode() -> str:
    """``WANDB_MODE`` (offline where it is unset), or a one-line :class:`CanterError` for a mode W&B does not have,
    an empty one too (``wandb.init``, which reads it itself, raised a pydantic ValidationError traceback once
    training started)."""
    mode = os.environ.get("WANDB_MODE", "offline")
    if mode not in MODES:
        from canter.errors import unknown

        raise unknown("WANDB_MODE", mode, MODES, see=None)
    return mode


#: the characters a W&B project name may not hold, and its longest length (wandb's Settings.validate_project)
PROJECT_FORBIDDEN, PROJECT_MAX = "/\\#?%:", 128


def check_project(project: str) -> None:
    """A one-line :class:`CanterError` for a ``wandb_project`` W&B refuses (``wandb.init`` raised its UsageError
    with a traceback once training had started)."""
    found = "".join(c for c in PROJECT_FORBIDDEN if c in project)
    if found:
        fixed = "".join("-" if c in PROJECT_FORBIDDEN else c for c in project)
        raise CanterError(f"wandb_project '{project}' is not a W&B project name: it holds {' '.join(found)} (none of "
                          f"{' '.join(PROJECT_FORBIDDEN)} may appear); e.g. '{fixed}'")
    if len(project) > PROJECT_MAX:
        raise CanterError(f"wandb_project '{project[:40]}...' is longer than the {PROJECT_MAX} characters W&B allows "
                          f"({len(project)}); e.g. '{project[:PROJECT_MAX]}'")


class WandbLogger:
    """Logs the same scalars as TensorBoard to a W&B run stored in the run directory."""

    def __init__(self, run_dir: str | Path, project: str = "canter", config: dict[str, Any] | None = None,
                 name: str | None = None) -> None:
        require_wandb()
        wandb_mode()  # (before anything is written)
        check_project(project)
        self.run_dir, self.project, self.config, self.name = str(run_dir), project, config or {}, name
        self.run: Any = None
        #: the :class:`~canter.run.Run` being logged (its error or divergence marks the W&B run failed)
        self.owner: Any = None
        #: the first step this W&B run has not had yet: a record below it was logged by a part of the run
        #: that a kill (or an error inside an iteration) stopped after its last checkpoint
        self.next_step = 0
        self._step_fd: int | None = None  # STEP_FILE, open for writing once a record was logged
        #: (step, return) of the last episode of a record only a stop signal made (PENDING_FILE), which the next
        #: record logged sends when it has no episode of its own, as the uninterrupted run's record there does
        self.pending: tuple[int, float] | None = None

    #: the W&B run id, kept in ``RUN_DIR/wandb`` so a resumed run logs to the same W&B run
    ID_FILE = "canter-run-id"
    #: the last step logged to the W&B run (``RUN_DIR/wandb``), so a resumed run logs no step twice
    STEP_FILE = "canter-logged-step"
    #: the step and last episode return of a record only a stop signal made (``RUN_DIR/wandb``), for the resumed run
    PENDING_FILE = "canter-pending-return"
    #: the last step W&B has when a part finished its W&B run (``RUN_DIR/wandb``): every point up to it (wandb-core may
    #: still be writing them to its files, which a resume in the same process read short); none after a kill
    FINISHED_FILE = "canter-finished-step"

    def _own_file(self, name: str, pattern: str, holds: str, deleted: str) -> str:
        """The first line of ``RUN_DIR/wandb/NAME``, "" when it is missing or empty (made, and killed before it was
        written); a one-line :class:`CanterError` naming it when it cannot be read or does not match ``pattern``
        (a damaged file: W&B refused a bad id with a traceback, a truncated step read as a smaller one)."""
        path = Path(self.run_dir) / "wandb" / name
        try:
            text = path.read_bytes().decode("utf-8").split("\n", 1)[0].strip()  # (a longer file: the first line)
        except FileNotFoundError:
            return ""
        except (OSError, UnicodeDecodeError) as exc:
            got = f"a file that cannot be read ({exc})"
        else:
            if not text or re.fullmatch(pattern, text):
                return text
            got = repr(text[:40])
        raise CanterError(f"{path} should hold {holds}, got {got}; restore it, or delete it to {deleted}")

    def _logged_step(self) -> int:
        """The last step an earlier part of the run logged (STEP_FILE), -1 for none."""
        text = self._own_file(self.STEP_FILE, r"\d{20}", "the last step logged to W&B (20 digits)",
                              "log again from the checkpoint's step (W&B renumbers steps it has had)")
        return int(text) if text else -1

    def start(self, run: Any) -> None:
        """Start the W&B run (its files go to ``RUN_DIR/wandb``) when training begins, so that a trainer
        that is built and never run leaves nothing in the run directory. A resumed run (``canter train
        --resume``) continues the W&B run its first part started (same id, ``resume="allow"``), as
        SB3 users do by hand. It logs no step the W&B run has had: those the killed part logged after its last
        checkpoint are skipped (W&B would renumber them to keep its steps increasing)."""
        import wandb

        logged = self._logged_step()  # (before wandb.init: a bad file leaves the run directory as it was)
        pending = self._own_file(self.PENDING_FILE, r"\d{20} -?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)",
                                 "a step (20 digits) and an episode return", "leave that return out of W&B")
        if pending:  # still to send: written by the stop the run resumes from, after the last step logged
            step, ret = pending.split(" ")
            if logged < int(step) == getattr(run, "resumed_step", None):
                self.pending = (int(step), float(ret))
        finished = self._own_file(self.FINISHED_FILE, r"\d{20}", "the last step of a finished W&B run (20 digits)",
                                  "resume from what W&B's own files hold")
        self.owner = run
        id_file = Path(self.run_dir) / "wandb" / self.ID_FILE
        run_id = self._own_file(self.ID_FILE, r"[A-Za-z0-9_-]{1,128}", "the id of the W&B run this run logs to",
                                "log to a new W&B run")
        if not run_id:
            run_id = secrets.token_hex(4)  # 8 lowercase characters, as W&B's own ids
            id_file.parent.mkdir(parents=True, exist_ok=True)
            id_file.write_text(run_id + "\n")
        offline = wandb_mode() in ("offline", "dryrun")
        held = (int(finished) if finished else held_step(self.run_dir, run_id)) if offline else None
        # (this part's own finish writes it again; a kill leaves none)
        (Path(self.run_dir) / "wandb" / self.FINISHED_FILE).unlink(missing_ok=True)
        self.run = wandb.init(
            project=self.project, dir=self.run_dir, config=self.config, name=self.name, id=run_id, resume="allow",
            mode=wandb_mode(), reinit="create_new",
            settings=wandb.Settings(silent=True, console="off", x_disable_stats=True),
        )
        # online, W&B knows the steps it has (starting_step); offline, its transaction logs (held, read before this
        # part's own is made) hold them: a kill leaves them without the points wandb-core had not written
        # (STEP_FILE, written before each point, is then ahead, and the resumed run would skip them for good), so
        # the resumed run logs from the last step they hold; STEP_FILE where they cannot be read
        self.next_step = max((logged if held is None else held) + 1, int(getattr(self.run, "starting_step", 0) or 0))

    def log(self, record: TrainRecord) -> None:
        """Send ``record``'s scalars and its last episode's return to the W&B run (not those of a step it has had,
        nor a record only a stop signal made: its step is no point of the uninterrupted run, and TensorBoard has its
        episodes). Such a record's last episode is the uninterrupted run's next record's where no episode ended
        between the two: it is kept (:attr:`PENDING_FILE`, for the resumed run) and sent with that record."""
        if record.step < self.next_step:
            return
        if made_by_stop(record):  # its last episode is the uninterrupted run's next record's, if that has none
            ret = record.episodes[-1].episode_return if record.episodes else None
            if ret is None and self.pending is not None:  # one still pending: at the step the run resumes from next
                ret = self.pending[1]
            if ret is not None:
                self.pending = (record.step, float(ret))
                path = Path(self.run_dir) / "wandb" / self.PENDING_FILE
                path.with_name(path.name + ".tmp").write_text(f"{self.pending[0]:020d} {self.pending[1]!r}\n")
                os.replace(path.with_name(path.name + ".tmp"), path)  # (a kill leaves the old or the new one)
            return
        data = scalars(record)
        if record.episodes:
            data["charts/episode_return"] = record.episodes[-1].episode_return
        elif self.pending is not None:
            data["charts/episode_return"] = self.pending[1]
        if data:
            self._write_step(record.step)  # first: a kill in between loses this point, never renumbers it
            self.run.log(data, step=record.step)
            self.next_step = record.step + 1
            if self.pending is not None:
                self.pending = None
                (Path(self.run_dir) / "wandb" / self.PENDING_FILE).unlink(missing_ok=True)

    def _write_step(self, step: int) -> None:
        """Record ``step`` in STEP_FILE: one fixed-width write in place (a kill leaves the old or the new step)."""
        if self._step_fd is None:
            self._step_fd = os.open(Path(self.run_dir) / "wandb" / self.STEP_FILE, os.O_WRONLY | os.O_CREAT, 0o644)
        os.pwrite(self._step_fd, f"{step:020d}\n".encode(), 0)

    def close(self) -> None:
        """Finish the W&B run: exit code 1 (W&B shows it failed) when training ended in an error, a divergence
        or a second Ctrl-C, else 0 (also after a first Ctrl-C, which saves a resumable run)."""
        if self._step_fd is not None:
            os.close(self._step_fd)
            self._step_fd = None
        if self.run is not None:
            owner = self.owner
            failed = owner is not None and bool(getattr(owner, "error", None) or getattr(owner, "divergence", None)
                                                or getattr(owner, "_abort", False))
            self.run.finish(exit_code=1 if failed else 0)
            if self.next_step > 0:  # after the finish: W&B has every step before next_step (what it held, and logged)
                (Path(self.run_dir) / "wandb" / self.FINISHED_FILE).write_text(f"{self.next_step - 1:020d}\n")
