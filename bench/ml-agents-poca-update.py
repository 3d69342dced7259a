"""ML-Agents' own POCA minibatch update on DungeonEscape-style shapes, for bench/ppo-update.ts's POCA row.

    PYTHONPATH=<ml-agents>/ml-agents:<ml-agents>/ml-agents-envs python3 bench/ml-agents-poca-update.py

Upstream's TorchPolicy and TorchPOCAOptimizer (release_21) with config/poca/DungeonEscape.yaml's
hyperparameters (batch 1024 of a buffer of 10240, 3 epochs, 2 x 256, no normalization): each
agent in a group of 4 (3 groupmates), one vector observation of 120 values, one discrete branch
of 7; prints ms per minibatch update and seconds per full update (30 minibatches).
"""
import time

import numpy as np

# release_21's test helpers use aliases that numpy 1.24 removed.
np.float = float
np.bool = bool
np.long = int

from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType  # noqa: E402
from mlagents.trainers.buffer import BufferKey, RewardSignalUtil  # noqa: E402
from mlagents.trainers.policy.torch_policy import TorchPolicy  # noqa: E402
from mlagents.trainers.poca.optimizer_torch import POCASettings, TorchPOCAOptimizer  # noqa: E402
from mlagents.trainers.settings import NetworkSettings, RewardSignalSettings, RewardSignalType, ScheduleType, TrainerSettings  # noqa: E402
from mlagents.trainers.tests import mock_brain  # noqa: E402
from mlagents.trainers.tests.mock_brain import copy_buffer_fields  # noqa: E402
from mlagents.trainers.torch_entities.networks import SimpleActor  # noqa: E402

BATCH = 1024
MINIBATCHES_PER_UPDATE = 10240 // BATCH * 3

spec = BehaviorSpec(
    [ObservationSpec((120,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "rays")],
    ActionSpec.create_discrete((7,)),
)
settings = TrainerSettings(
    trainer_type="poca",
    hyperparameters=POCASettings(batch_size=BATCH, buffer_size=10240, learning_rate=3e-4, beta=0.01, epsilon=0.2, lambd=0.95, num_epoch=3, learning_rate_schedule=ScheduleType.CONSTANT),
    network_settings=NetworkSettings(normalize=False, hidden_units=256, num_layers=2),
    reward_signals={RewardSignalType.EXTRINSIC: RewardSignalSettings(gamma=0.99, strength=1.0)},
    max_steps=20000000,
)
policy = TorchPolicy(0, spec, settings.network_settings, SimpleActor, {"conditional_sigma": False, "tanh_squash": False})
optimizer = TorchPOCAOptimizer(policy, settings)
rollout = mock_brain.simulate_rollout(4 * BATCH, spec, memory_size=0, num_other_agents_in_group=3)
copy_buffer_fields(
    rollout,
    BufferKey.ENVIRONMENT_REWARDS,
    [
        BufferKey.ADVANTAGES,
        RewardSignalUtil.returns_key("extrinsic"),
        RewardSignalUtil.value_estimates_key("extrinsic"),
        RewardSignalUtil.baseline_estimates_key("extrinsic"),
    ],
)
minibatches = [rollout.make_mini_batch(i * BATCH, (i + 1) * BATCH) for i in range(4)]
optimizer.update(minibatches[0], 1)
count = 0
start = time.time()
while time.time() - start < 10 or count < 8:
    optimizer.update(minibatches[count % 4], 1)
    count += 1
ms = 1000 * (time.time() - start) / count
print(f"POCA, DungeonEscape-style: {ms:.1f} ms per minibatch, {ms * MINIBATCHES_PER_UPDATE / 1000:.2f} s per update ({MINIBATCHES_PER_UPDATE} minibatches)")
