"""Networks: MLP trunks, actor-critic and Q-value models, fast distribution helpers."""
from canter.models.mlp import MLP, ActorCritic, QNetwork, obs_dim

__all__ = ["MLP", "ActorCritic", "QNetwork", "obs_dim"]
