"""SB3 DQN on LunarLander-v3 with the rl-zoo3 settings canter's preset uses: the direct check of canter's DQN row.

Usage: python benchmarks/sb3_dqn_lunarlander.py SEED  (100k steps, then 100 deterministic episodes)
"""
import sys
import time

import torch
from stable_baselines3 import DQN
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.env_util import make_vec_env

torch.set_num_threads(1)
seed = int(sys.argv[1])
env = make_vec_env("LunarLander-v3", n_envs=1, seed=seed)
m = DQN("MlpPolicy", env, learning_rate=6.3e-4, batch_size=128, buffer_size=50000, learning_starts=0, gamma=0.99,
        target_update_interval=250, train_freq=4, gradient_steps=-1, exploration_fraction=0.12,
        exploration_final_eps=0.1, policy_kwargs=dict(net_arch=[256, 256]), seed=seed, verbose=0)
t = time.time(); m.learn(100_000); wall = time.time() - t
ev = make_vec_env("LunarLander-v3", n_envs=10, seed=10000 + seed)
mean, std = evaluate_policy(m, ev, n_eval_episodes=100, deterministic=True)
print(f"sb3 dqn LunarLander-v3 seed {seed}: final mean {mean:.1f} +- {std:.1f} over 100 episodes, train {wall:.0f}s", flush=True)
