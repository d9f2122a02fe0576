"""``canter tune``'s checks of a study and its output directory: what a call may continue (direction, owner,
search space), the reporting interval the study keeps, and the ``best.yaml`` another study wrote.
:mod:`canter.tools.tune` imports them from here."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from canter.errors import CanterError
from canter.tools.tune_space import Param, check_study_space
from canter.tools.tune_storage import shown_url


def _check_study(st: Any, study_name: str, url: str, algo: str, env: str, space: dict[str, Param]) -> None:
    """Refuse (CanterError) a study that this call cannot continue: one that minimizes, tunes another algorithm or env,
    or sampled a parameter from a distribution the search space now changes; a new study is marked as ``algo``'s."""
    # a study made beforehand (to enqueue trials) has Optuna's default direction, minimize: its best
    # trial would be the lowest return, and TPE would search for low returns
    if [d.name for d in st.directions] != ["MAXIMIZE"]:
        raise CanterError(f"study '{study_name}' in {shown_url(url)} has direction(s) "
                          f"{', '.join(d.name.lower() for d in st.directions)}; canter tune maximizes the "
                          "evaluation return: create it with direction='maximize' or choose another --study")
    owner = st.user_attrs.get("canter")
    if owner is not None and owner != {"algo": algo, "env": env}:
        raise CanterError(f"study '{study_name}' in {shown_url(url)} tunes {owner['algo']} on {owner['env']}; "
                          "choose another --study")
    check_study_space(st, space)
    if owner is None:
        st.set_user_attr("canter", {"algo": algo, "env": env})


def _study_every(study: Any, eval_every: int) -> int:
    """The env steps of one reporting interval of ``study`` (pruning compares trials at the same interval number):
    the ``eval_every`` of its first trial (``eval_every``, this trial's, when it is the first), kept in the study."""
    every = study.user_attrs.get("report_every")
    if every is None:
        study.set_user_attr("report_every", eval_every)
        return eval_every
    return int(every)


def _adopt_report_every(st: Any) -> None:
    """Keep in a study of an earlier canter, which did not, its first trial's ``eval_every`` as its reporting
    interval (:func:`_study_every`)."""
    if st.user_attrs.get("report_every") is None:
        first = next((t.user_attrs["config"] for t in st.get_trials(deepcopy=False) if "config" in t.user_attrs), None)
        if first is not None and "eval_every" in first:
            st.set_user_attr("report_every", int(first["eval_every"]))


def _check_out_owner(out_dir: Path, study_name: str, url: str, default_storage: bool = False) -> None:
    """Refuse an ``out_dir`` whose ``best.yaml`` another study wrote (this one would overwrite it).

    With the default storage (``out_dir/study.db``), a best.yaml naming this study in another
    directory's ``study.db`` is this study's: the directory was moved, copied or reached by another path."""
    best = out_dir / "best.yaml"
    if not best.exists():
        return
    try:
        head = best.read_text(errors="replace").splitlines()[:3]
    except OSError as exc:
        raise CanterError(f"cannot read {best}: {exc.strerror or exc}") from None
    owner = next((m.groups() for m in map(_STUDY_LINE.match, head) if m), None)
    moved = (default_storage and owner is not None and owner[0] == study_name and owner[1].startswith("sqlite:///")
             and owner[1].replace("\\", "/").rsplit("/", 1)[-1] == "study.db" and (out_dir / "study.db").exists())
    # the header shows the URL without its password (an earlier canter wrote it as given)
    if owner not in ((study_name, url), (study_name, shown_url(url))) and not moved:
        what = f"study '{owner[0]}' in {shown_url(owner[1])}" if owner else "a file canter tune did not write"
        raise CanterError(f"--out '{out_dir}' holds best.yaml of {what}; choose another --out (this would "
                          f"overwrite it)")


#: the second line of the header :func:`_finish` writes into ``best.yaml``
_STUDY_LINE = re.compile(r"^# study '(.*)' in (.*)$")
