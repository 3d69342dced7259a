/**
 * The worker thread of a threaded SAC trainer (threaded: true): it owns a copy of SAC's networks,
 * log alpha and their Adams and runs the updates the trainer hands it (./update.ts), so that the
 * environments keep stepping meanwhile (../update-thread.ts runs the loop). It runs them on the
 * backend the main thread chose for the updates: WebGPU's when one was chosen, each read of the
 * update's passes awaited, while acting stays on the main thread; behavioral cloning's rounds too.
 */
import { ActionSpec } from '../../env/behavior-spec';
import { runPassAsync } from '../../networks/tensor-io';
import { NonFiniteLossError } from '../non-finite-loss';
import { serveUpdates } from '../update-thread';
import { createBehavioralCloning } from '../behavioral-cloning';
import { SacOptimizer } from './optimizer';
import { SacUpdateReply, SacUpdateRequest, SacWorkerSetup, createSacModel } from './update';

serveUpdates<SacWorkerSetup, SacUpdateRequest, SacUpdateReply>((setup) => {
  const spec = { observationSpecs: setup.observationSpecs, actionSpec: new ActionSpec(setup.continuousSize, setup.discreteBranches) };
  const model = createSacModel(spec, setup.settings, setup.seed);
  // Seeded as the trainer's own: the same Q networks, the same stream of reparameterization noise and of cloning's draws.
  const optimizer = new SacOptimizer(model, spec, {
    hyperparameters: setup.settings.hyperparameters,
    maxSteps: setup.settings.max_steps,
    signals: setup.signals,
    behavioralCloning: createBehavioralCloning(model, setup.behaviorName, setup.settings, setup.seed),
    seed: setup.seed,
  });

  return async (request) => {
    if (request.state !== null) optimizer.loadUpdatedState(request.state);
    if (request.normalizer !== null) model.normalizer!.copyFrom(request.normalizer);
    try {
      const stats: Array<Record<string, number>> = [];
      for (const { rows, signalRewards } of request.minibatches) stats.push(await runPassAsync(optimizer.updateAndClonePass(rows, request.step, signalRewards)));
      const state = optimizer.updatedState();
      return { reply: { kind: 'updated', state, stats }, transfer: state.map(([, values]) => values.buffer as ArrayBuffer) };
    } catch (error) {
      if (error instanceof NonFiniteLossError) return { reply: { kind: 'nonFiniteLoss', message: error.message }, transfer: [] };
      throw error;
    }
  };
});
