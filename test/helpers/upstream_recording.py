"""What the scripts that record fixtures from upstream's trainers (ml-agents release_21, torch)
share: numpy's removed aliases put back for that release, a stand-in for TensorBoard (only stats
go through it, and check_environment_trains replaces the writers anyway), torch on one thread,
the trainer types registered, the JSON form of arrays, weights and trajectories, the rows a
trajectory adds to the update buffer, and the recorded update (record_update_at).

A recorder imports it before anything of mlagents:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "helpers"))
    from upstream_recording import floats, weights
"""
import json
import os
import sys
import types

import numpy as np

for _name, _type in (("float", float), ("bool", bool), ("int", int), ("object", object), ("long", np.int64)):
    if not hasattr(np, _name):
        setattr(np, _name, _type)
_tensorboard = types.ModuleType("torch.utils.tensorboard")
_tensorboard.SummaryWriter = type("SummaryWriter", (), {"__init__": lambda self, *a, **k: None, "__getattr__": lambda self, name: (lambda *a, **k: None)})
sys.modules["torch.utils.tensorboard"] = _tensorboard

import torch  # noqa: E402

torch.set_num_threads(1)
from mlagents.plugins.trainer_type import register_trainer_plugins  # noqa: E402
from mlagents.trainers.buffer import BufferKey  # noqa: E402

register_trainer_plugins()


def floats(values):
    """A flat list of the values; nine significant digits hold a float32 exactly."""
    return [float("%.9g" % v) for v in np.asarray(values, dtype=np.float64).ravel()]


def weights(module):
    """A module's state, each tensor flat, by torch's names."""
    return {k: floats(v.detach().numpy()) for k, v in module.state_dict().items()}


def record_update_at(trainer_class, update, record, out, sequences=lambda trainer: 1):
    """Lets trainer_class's updates run as usual until its update-th (1 for the first). That one
    records instead, in `record`: the advantages standardized as upstream's update does, then the
    losses of one optimizer update on the first batch_size rows and the gradients of its summed
    loss (the step itself skipped), with the trainer's step; writes `record` to `out` and ends the
    process. Each earlier update empties `record` but for a new list of trajectories.
    `sequences(trainer)`: the sequences in a minibatch, as the update takes them."""
    original = trainer_class._update_policy
    updates = [0]

    def update_policy(self):
        updates[0] += 1
        if updates[0] < update:
            record.clear()
            record["trajectories"] = []
            return original(self)
        buffer = self.update_buffer
        advantages = np.array(buffer[BufferKey.ADVANTAGES].get_batch(), dtype=np.float32)
        buffer[BufferKey.ADVANTAGES].set((advantages - advantages.mean()) / (advantages.std() + 1e-10))
        record["standardized_advantages"] = floats(buffer[BufferKey.ADVANTAGES].get_batch())
        minibatch = buffer.make_mini_batch(0, self.hyperparameters.batch_size)
        optimizer = self.optimizer
        gradients = {}

        def capture(*args, **kwargs):
            gradients["actor"] = {k: floats(p.grad) for k, p in optimizer.policy.actor.named_parameters() if p.grad is not None}
            gradients["critic"] = {k: floats(p.grad) for k, p in optimizer.critic.named_parameters() if p.grad is not None}

        optimizer.optimizer.step = capture
        record["losses"] = optimizer.update(minibatch, sequences(self))
        record["gradients"] = gradients
        record["step"] = int(self.get_step)
        json.dump(record, open(out, "w"))
        print(f"wrote {out}: {len(record['trajectories'])} trajectories, {buffer.num_experiences} rows")
        os._exit(0)

    trainer_class._update_policy = update_policy


def trajectory_json(trajectory, step_fields):
    """A trajectory as the agent processor built it (one vector observation): each step's
    observation, reward and flags with `step_fields(step)`, the next observation, the end flags."""
    return {
        "agent_id": trajectory.agent_id,
        "steps": [{
            "obs": floats(step.obs[0]),
            "reward": float(step.reward),
            "done": bool(step.done),
            "interrupted": bool(step.interrupted),
            **step_fields(step),
        } for step in trajectory.steps],
        "next_obs": floats(trajectory.next_obs[0]),
        "done_reached": bool(trajectory.done_reached),
        "interrupted": bool(trajectory.interrupted),
    }


def rows_added(trainer, process, trajectory):
    """Runs `process(trainer, trajectory)`; returns a reader of the rows it added to the update
    buffer: column(key) -> those rows of that column, flat."""
    before = trainer.update_buffer.num_experiences
    process(trainer, trajectory)
    rows = slice(before, trainer.update_buffer.num_experiences)
    return lambda key: floats(trainer.update_buffer[key].get_batch()[rows])
