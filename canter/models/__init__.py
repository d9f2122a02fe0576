"""Networks: MLP trunks, actor-critic and Q-value models, fast distribution helpers."""
from canter.models.mlp import MLP, ActorCritic, obs_dim
from canter.models.q_network import QNetwork
from canter.models import cnn, continuous, distributional, mixing, recurrent  # noqa: F401,E402  (register encoders, mlp_sac, mlp_td3, mlp_qr, qmix, ...)

__all__ = ["MLP", "ActorCritic", "QNetwork", "obs_dim"]
