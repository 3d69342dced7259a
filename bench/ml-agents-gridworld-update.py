"""ML-Agents' own PPO minibatch update on GridWorld's settings, for bench/ppo-update.ts's ML-Agents column.

    PYTHONPATH=<ml-agents>/ml-agents:<ml-agents>/ml-agents-envs python3 bench/ml-agents-gridworld-update.py hyper|none

Upstream's TorchPolicy and TorchPPOOptimizer (release_21) on a 3x64x84 camera and a 2-value goal
(a GOAL_SIGNAL with `hyper`, an ordinary observation with `none`), 5 discrete actions, simple
encoder, 1 x 128, batch 32 of a rollout of 256; prints ms per minibatch update.
"""
import sys
import time

import numpy as np

# release_21's test helpers use aliases that numpy 1.24 removed.
np.float = float
np.bool = bool

from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType  # noqa: E402
from mlagents.trainers.buffer import BufferKey, RewardSignalUtil  # noqa: E402
from mlagents.trainers.policy.torch_policy import TorchPolicy  # noqa: E402
from mlagents.trainers.ppo.optimizer_torch import PPOSettings, TorchPPOOptimizer  # noqa: E402
from mlagents.trainers.settings import EncoderType, NetworkSettings, ScheduleType, TrainerSettings  # noqa: E402
from mlagents.trainers.tests import mock_brain  # noqa: E402
from mlagents.trainers.tests.mock_brain import copy_buffer_fields  # noqa: E402
from mlagents.trainers.torch_entities.networks import SimpleActor  # noqa: E402

goal_type = ObservationType.GOAL_SIGNAL if sys.argv[1] == "hyper" else ObservationType.DEFAULT
image = (DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE)
spec = BehaviorSpec(
    [
        ObservationSpec((3, 64, 84), image, ObservationType.DEFAULT, "camera"),
        ObservationSpec((2,), (DimensionProperty.NONE,), goal_type, "goal"),
    ],
    ActionSpec.create_discrete((5,)),
)
settings = TrainerSettings(
    trainer_type="ppo",
    hyperparameters=PPOSettings(batch_size=32, buffer_size=256, learning_rate=3e-4, beta=0.005, epsilon=0.2, lambd=0.95, num_epoch=3, learning_rate_schedule=ScheduleType.LINEAR),
    network_settings=NetworkSettings(normalize=False, hidden_units=128, num_layers=1, vis_encode_type=EncoderType.SIMPLE),
    max_steps=500000,
)
policy = TorchPolicy(0, spec, settings.network_settings, SimpleActor, {"conditional_sigma": False, "tanh_squash": False})
optimizer = TorchPPOOptimizer(policy, settings)
rollout = mock_brain.simulate_rollout(256, spec, memory_size=0)
copy_buffer_fields(rollout, BufferKey.ENVIRONMENT_REWARDS, [BufferKey.ADVANTAGES, RewardSignalUtil.returns_key("extrinsic"), RewardSignalUtil.value_estimates_key("extrinsic")])
minibatches = [rollout.make_mini_batch(i * 32, (i + 1) * 32) for i in range(8)]
for minibatch in minibatches[:3]:
    optimizer.update(minibatch, 32)
count = 0
start = time.time()
while time.time() - start < 5 or count < 16:
    optimizer.update(minibatches[count % 8], 32)
    count += 1
print(f"{sys.argv[1]}: {1000 * (time.time() - start) / count:.1f} ms per minibatch")
