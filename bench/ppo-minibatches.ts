/**
 * PPO minibatches as the update buffer would give them, for the benches that time an update:
 * Gaussian observations (a goal signal a one-hot of its size, as GridWorld's: the hypernetwork's
 * cost depends on how many goals differ), actions and log probs from the policy itself, Gaussian
 * advantages and returns, the critic's own values.
 */
import { SeededRandom } from '../src/common/random';
import { BehaviorSpec, ObservationSpec, ObservationType, observationSize } from '../src/env/behavior-spec';
import { ActorCritic } from '../src/networks/actor-critic';
import { PpoMinibatch } from '../src/trainers/ppo/loss';

export function ppoMinibatches(model: ActorCritic, howMany: number, spec: BehaviorSpec, batch: number): PpoMinibatch[] {
  const random = new SeededRandom(2);
  const values = (obs: ObservationSpec): Float32Array => {
    const size = observationSize(obs);
    if (obs.observationType !== ObservationType.GOAL_SIGNAL) return new Float32Array(batch * size).map(() => random.gaussian());
    const goals = new Float32Array(batch * size);
    for (let s = 0; s < batch; s++) goals[s * size + random.int(size)] = 1;
    return goals;
  };
  return Array.from({ length: howMany }, () => {
    const observations = spec.observationSpecs.map(values);
    model.updateNormalization(observations, batch);
    const acted = model.act(observations, batch);
    return {
      count: batch,
      observations,
      continuousActions: acted.action.continuous,
      discreteActions: acted.action.discrete,
      actionMasks: null,
      oldContinuousLogProbs: acted.logProbs.continuous,
      oldDiscreteLogProbs: acted.logProbs.discrete,
      advantages: new Float32Array(batch).map(() => random.gaussian()),
      returns: { extrinsic: new Float32Array(batch).map(() => random.gaussian()) },
      oldValues: model.values(observations, batch),
    };
  });
}
