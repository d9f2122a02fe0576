"""The ``canter train --resume RUN --FLAG VALUE`` that a resume suggests for a hand-edited config.yaml setting
quotes the value for the shell, as it quotes the run directory (951faf32): a ``ray_address`` with a space was
pasted in bare and split into two arguments."""
from __future__ import annotations

import shlex

import pytest
import yaml

from canter.errors import CanterError
from canter.resume_checks import check_config_unedited


@pytest.mark.parametrize("address", ["ray://head node:10001", "bob's-head:6379", "10.0.0.1:6379"])
def test_an_edited_ray_address_is_named_in_a_command_that_pastes_whole(tmp_path, address):
    run_dir = tmp_path / "bob's run"
    run_dir.mkdir()
    saved = dict(algo="ppo", env="CartPole-v1", seed=0, ray_address=None)
    (run_dir / "config.yaml").write_text(yaml.safe_dump({**saved, "ray_address": address}))
    with pytest.raises(CanterError) as info:
        check_config_unedited(run_dir, saved)
    command = str(info.value).split("given again: ", 1)[1].rsplit(" (or undo the edit)", 1)[0]
    assert shlex.split(command) == ["canter", "train", "--resume", str(run_dir), "--ray-address", address], command
