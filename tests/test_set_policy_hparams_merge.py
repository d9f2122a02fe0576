"""A repeated ``--set policy_hparams={...}`` merges, per policy, then per key, as ``--set hparams={...}`` does."""
import canter.config

MIXED = "pettingzoo:tests.mixed_agents"


def test_a_second_set_policy_hparams_keeps_the_first_ones_policies():
    """--set policy_hparams={listener: ...} then --set policy_hparams={speaker: ...} kept only the speaker (the
    listener's algo and n_steps dropped without a word), where a second --set hparams={...} keeps the first's."""
    run, _ = canter.config.resolve_config("dqn", MIXED, sets=[
        "policies=type", "policy_hparams={listener: {algo: ppo, n_steps: 8}}", "policy_hparams={speaker: {algo: random}}"])
    assert run.policy_hparams == {"listener": {"algo": "ppo", "n_steps": 8}, "speaker": {"algo": "random"}}


def test_a_second_set_policy_hparams_merges_a_policys_keys_in_order(tmp_path):
    """Per key within a policy, the later item winning; a dotted entry given before is kept
    (the file's entries stay under --set's, as its hparams' do)."""
    f = tmp_path / "run.yaml"
    f.write_text("policies: type\npolicy_hparams: {listener: {gamma: 0.5}, speaker: {lr: 0.01}}\n")
    run, _ = canter.config.resolve_config("ppo", MIXED, f, sets=[
        "policy_hparams.listener.n_steps=16", "policy_hparams={listener: {lr: 0.1, n_epochs: 2}}",
        "policy_hparams={listener: {lr: 0.2}, speaker: {activation: 'relu'}}"])
    assert run.policy_hparams == {"listener": {"gamma": 0.5, "n_steps": 16, "lr": 0.2, "n_epochs": 2},
                                  "speaker": {"lr": 0.01, "activation": "relu"}}
