/**
 * POCA with threaded: true, as upstream's trainer controller threads any trainer whose settings
 * say so: the update runs in a worker thread (the built dist/trainers/poca/update-worker.js)
 * while the main thread goes on, and gives exactly what the same update gives on the main thread
 * (actor, critic, both Adams); what the main thread feeds meanwhile (the normalizers, the most
 * members seen) is kept; a NaN loss is the unthreaded trainer's error; a checkpoint restored after
 * the worker started reaches it.
 */
import * as path from 'path';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../../src/env/behavior-spec';
import { settingsForBehavior } from '../../../src/config';
import { memoryLogger } from '../../../src/common/logger';
import { selectBackend } from '../../../src/networks/backend';
import { StatsRegistry } from '../../../src/stats';
import { AgentManagerQueue } from '../../../src/trainers/agent-manager-queue';
import { NonFiniteLossError } from '../../../src/trainers/non-finite-loss';
import { PocaTrainer, PocaTrainerSettings } from '../../../src/trainers/poca/trainer';
import type { ModelPolicy } from '../../../src/trainers/rl-trainer-base';
import { GroupmateStatus, Trajectory } from '../../../src/trainers/trajectory';
import { load } from '../../config/config-helpers';
import { tempDir } from '../../helpers/paths';

const SPEC: BehaviorSpec = {
  observationSpecs: [{ shape: [2], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'vector' }],
  actionSpec: new ActionSpec(1, [3]),
};

/** batch 4, buffer 8 (an update once more than 8 experiences wait), 2 epochs: 9 experiences make 2 minibatches an epoch, 4 Adam steps an update. */
function settings(threaded: boolean): PocaTrainerSettings {
  const { options } = load(
    'behaviors:\n  B:\n    trainer_type: poca\n' +
      '    hyperparameters: {batch_size: 4, buffer_size: 8, num_epoch: 2}\n' +
      '    network_settings: {num_layers: 1, hidden_units: 8, normalize: true}\n' +
      `    max_steps: 1000\n    threaded: ${threaded}\n`,
  );
  return settingsForBehavior(options, 'B', memoryLogger()) as PocaTrainerSettings;
}

const trainers: PocaTrainer[] = [];

function trainer(threaded: boolean): PocaTrainer {
  const created = new PocaTrainer({ behaviorName: 'B', spec: SPEC, settings: settings(threaded), stats: new StatsRegistry().reporter('B'), seed: 3 });
  trainers.push(created);
  return created;
}

/** A trajectory of `rewards.length` steps acted by `actor`'s policy beside `mates` groupmates; `salt` varies the observations. */
function trajectory(actor: PocaTrainer, rewards: number[], salt: number, mates: number): Trajectory {
  const n = rewards.length;
  const obs = Float32Array.from({ length: n * 2 }, (_, i) => Math.sin(i + salt));
  const acted = actor.model.act([obs], n);
  const mate = (t: number, m: number): GroupmateStatus => ({
    obs: [Float32Array.from([Math.cos(t + m + salt), 0.5 * m])],
    reward: 0.1 * m,
    continuousAction: Float32Array.from([0.2 * m - 0.1]),
    discreteAction: Int32Array.from([m % 3]),
    done: t === n - 1,
  });
  return new Trajectory({
    agentId: `agent_0-${salt}`,
    behaviorId: 'B',
    steps: {
      length: n,
      obs: [obs],
      continuousActions: acted.action.continuous,
      discreteActions: acted.action.discrete,
      continuousLogProbs: acted.logProbs.continuous,
      discreteLogProbs: acted.logProbs.discrete,
      actionMasks: new Float32Array(0),
      prevActions: new Int32Array(n),
      rewards: Float32Array.from(rewards),
      groupRewards: new Float32Array(n).fill(0.5),
      groupStatuses: Array.from({ length: n }, (_, t) => Array.from({ length: mates }, (_, m) => mate(t, m))),
    },
    nextObs: [Float32Array.from([0.5, -0.5])],
    nextGroupObs: Array.from({ length: mates }, (_, m) => [Float32Array.from([0.25 * m, -0.25])]),
    doneReached: true,
    interrupted: false,
  });
}

/** Gives the trainers the same trajectories (acted by `actor`) and advances each once. */
function feed(targets: PocaTrainer[], actor: PocaTrainer, rewards: number[][], mates: number, queue: AgentManagerQueue<ModelPolicy>): boolean[] {
  const acted = rewards.map((r, i) => trajectory(actor, r, i, mates));
  return targets.map((target) => {
    const trajectories = new AgentManagerQueue<Trajectory>('B');
    for (const t of acted) trajectories.put(t);
    return target.advance(trajectories, queue);
  });
}

function expectSameState(ours: PocaTrainer, reference: PocaTrainer): void {
  expect(ours.optimizer.actorAdam.step).toBe(reference.optimizer.actorAdam.step);
  expect(ours.model.parameters).toEqual(reference.model.parameters);
  expect(ours.critic.parameters).toEqual(reference.critic.parameters);
  expect(ours.optimizer.actorAdam.secondMoment).toEqual(reference.optimizer.actorAdam.secondMoment);
  expect(ours.optimizer.criticAdam.firstMoment).toEqual(reference.optimizer.criticAdam.firstMoment);
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

afterEach(async () => {
  await Promise.all(trainers.splice(0).map((t) => t.close()));
});

describe('PocaTrainer with threaded: true', () => {
  it('hands the full buffer to the worker and keeps going; the update it applies later is the unthreaded one, and what the main thread fed meanwhile stays', async () => {
    const threaded = trainer(true);
    const inline = trainer(false);
    const policies = new AgentManagerQueue<ModelPolicy>('B');
    const before = threaded.critic.parameters.slice();

    const [threadedChanged, inlineChanged] = feed([threaded, inline], inline, [[0, 1, 0, 0, 1], [1, 0, 0, 1]], 1, policies);
    expect(inlineChanged).toBe(true);
    expect(threaded.updateBuffer.numExperiences).toBe(0);
    expect(threaded.critic.parameters).toEqual(before);
    expect(threadedChanged).toBe(false);
    policies.tryGet();

    // Meanwhile more experiences come, of a group of three: they feed the normalizers and the
    // count of members on this thread, and go to the next buffer.
    feed([threaded, inline], inline, [[0, 0, 1]], 2, policies);
    expect(threaded.updateBuffer.numExperiences).toBe(3);
    const fedNormalizer = threaded.critic.normalizer!.state();
    expect(threaded.critic.maxAgents).toBe(3);

    let turns = 0;
    while (!threaded.advance(new AgentManagerQueue<Trajectory>('B'), policies)) {
      turns++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(turns).toBeGreaterThan(0);
    expect(policies.tryGet()).toBe(threaded.policy);
    expect(threaded.optimizer.actorAdam.step).toBe(4);
    expectSameState(threaded, inline);
    expect(threaded.critic.normalizer!.state()).toEqual(fedNormalizer);
    expect(threaded.model.normalizer!.steps).toBe(inline.model.normalizer!.steps);
    expect(threaded.critic.maxAgents).toBe(3);
  });

  it('stops on a NaN loss in the worker with the error the unthreaded trainer gives', async () => {
    const threaded = trainer(true);
    const inline = trainer(false);
    const policies = new AgentManagerQueue<ModelPolicy>('B');
    const rewards = [[0, 1, 0, NaN, 1], [1, 0, 0, 1]];
    const inlineError = (() => {
      try {
        feed([inline], inline, rewards, 1, policies);
      } catch (error) {
        return error as Error;
      }
      return null;
    })();
    expect(inlineError).toBeInstanceOf(NonFiniteLossError);
    expect(inlineError!.message).toMatch(/^Behavior B: The POCA loss is NaN .* at step 9: the update was not applied\.$/);

    const before = threaded.model.parameters.slice();
    feed([threaded], inline, rewards, 1, policies);
    const error = await threaded.finishUpdate().then(
      () => null,
      (thrown: unknown) => thrown as Error,
    );
    expect(error).toBeInstanceOf(NonFiniteLossError);
    expect(error!.message).toBe(inlineError!.message);
    expect(threaded.model.parameters).toEqual(before);
  });

  it('a checkpoint restored after the worker started reaches it: the next update starts from it', async () => {
    const source = trainer(false);
    const threaded = trainer(true);
    const inline = trainer(false);
    const policies = new AgentManagerQueue<ModelPolicy>('B');
    feed([source], source, [[0, 1, 0, 0, 1, 1], [1, 1, 0, 1]], 1, policies);
    const file = path.join(tempDir('poca-threaded-resume'), 'source.ckpt');
    source.saveCheckpoint(file, 10);

    // One update each first, so that the worker holds weights of its own.
    feed([threaded, inline], inline, [[0, 1, 0, 0, 1], [1, 0, 0, 1]], 1, policies);
    await threaded.finishUpdate();
    for (const t of [threaded, inline]) t.loadCheckpoint(file);
    feed([threaded, inline], inline, [[1, 1, 0, 0, 1], [0, 0, 0, 1]], 1, policies);
    await threaded.finishUpdate();
    expect(threaded.optimizer.actorAdam.step).toBe(8);
    expectSameState(threaded, inline);
  });
});
