"""A policy's Stable-Baselines3 net_arch mapping ({pi: [...], vf: [...]}) in policy_hparams is read where its layer
gives it, as hparams' is: a later layer's mapping wins over a lower layer's critic_net_arch, one layer giving the critic
both ways is refused, and config.yaml holds the two lists."""
from __future__ import annotations

import pytest

from canter.config import resolve_config
from canter.errors import CanterError
from canter.multiagent_config import policy_config
from support import MIXED

pytest.importorskip("pettingzoo")


def _speaker(tmp_path, text, sets=()):
    path = tmp_path / "run.yaml"
    path.write_text(f"env: {MIXED}\npolicies: type\n{text}", encoding="utf-8")
    run, algo_cfg = resolve_config("ppo", config_file=str(path), sets=list(sets))
    cfg = policy_config(run, algo_cfg, "speaker")
    return run.policy_hparams["speaker"], (cfg.net_arch, cfg.critic_net_arch)


@pytest.mark.parametrize("sets", [["policy_hparams.speaker.net_arch={pi: [16], vf: [8]}"],
                                  ["policy_hparams={speaker: {net_arch: {pi: [16], vf: [8]}}}"]])
def test_a_later_layers_mapping_wins_over_a_files_critic_net_arch(tmp_path, sets):
    """The file's critic_net_arch [4] won over --set's vf [8], without a word (hparams' --set net_arch={pi, vf} over
    a file's critic_net_arch gave vf)."""
    recorded, built = _speaker(tmp_path, "policy_hparams:\n  speaker: {net_arch: [16], critic_net_arch: [4]}\n", sets)
    assert built == ([16], [8])
    assert recorded == {"net_arch": [16], "critic_net_arch": [8]}


def test_a_later_set_critic_net_arch_still_wins_over_the_mapping(tmp_path):
    recorded, built = _speaker(tmp_path, "policy_hparams:\n  speaker: {net_arch: {pi: [16], vf: [8]}}\n",
                               ["policy_hparams.speaker.critic_net_arch=[2]"])
    assert built == ([16], [2]) and recorded == {"net_arch": [16], "critic_net_arch": [2]}


def test_config_yaml_holds_the_two_lists(tmp_path):
    """The mapping was recorded as given, where docs/architecture.md says config.yaml holds only the two lists."""
    recorded, built = _speaker(tmp_path, "policy_hparams:\n  speaker: {lr: 0.001, net_arch: {pi: [16], vf: [8]}}\n")
    assert recorded == {"lr": 0.001, "net_arch": [16], "critic_net_arch": [8]} and built == ([16], [8])


def test_one_file_giving_the_critic_both_ways_is_refused(tmp_path):
    """It took critic_net_arch [4] and dropped vf [8] silently; hparams given so are refused."""
    with pytest.raises(CanterError, match=r"'policy_hparams.speaker.critic_net_arch' is set both by net_arch's "
                                          r"mapping and by critic_net_arch in .*run.yaml; give it once"):
        _speaker(tmp_path, "policy_hparams:\n  speaker: {net_arch: {pi: [16], vf: [8]}, critic_net_arch: [4]}\n")
