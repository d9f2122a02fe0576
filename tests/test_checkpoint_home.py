"""agent.save and canter.load expand '~' in a path, as init_from does."""

from __future__ import annotations

import canter


def test_save_and_load_expand_the_home_directory(tmp_path, monkeypatch):
    """agent.save('~/x') wrote ./~/x (a folder named '~' in the working directory) and canter.load('~/x') looked
    there, not in the home directory."""
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    agent = canter.train("ppo", env="CartPole-v1", max_steps=64, n_envs=2, n_steps=32, batch_size=32, n_epochs=1,
                         eval_episodes=0, run_dir=None, quiet=True)
    agent.save("~/agent")
    assert (home / "agent.safetensors").exists() and (home / "agent.json").exists()
    assert not (cwd / "~").exists()
    loaded = canter.load("~/agent")
    assert loaded.run_config.env == "CartPole-v1"
    assert canter.load("~/agent.safetensors").run_config.algo == "ppo"
