"""Shared test setup: one torch thread, offline W&B, no network."""
import os

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture
def tiny_ppo() -> dict:
    """Run-config overrides for a PPO run that finishes in about a second."""
    return dict(max_steps=512, n_envs=2, eval_episodes=2, eval_every=0, n_steps=64, batch_size=64, n_epochs=2)
