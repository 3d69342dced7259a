/**
 * The worker thread of a threaded PPO trainer (threaded: true): it owns a copy of the behavior's
 * networks and Adam state and runs each update the main thread hands it (./update-protocol.ts),
 * so that the environments keep stepping meanwhile (../update-thread.ts runs the loop). It runs
 * the models on the backend the main thread chose for the updates: WebGPU's when one was chosen
 * (backend.ts), while acting stays on the main thread.
 */
import { SeededRandom } from '../../common/random';
import { ActionSpec } from '../../env/behavior-spec';
import { runPassAsync } from '../../networks/tensor-io';
import { NonFiniteLossError } from '../non-finite-loss';
import { serveUpdates } from '../update-thread';
import {
  UpdateReply,
  UpdateRequest,
  UpdateWorkerSetup,
  loadProviderNormalizers,
  normalizerAdditions,
  optimizerStateOf,
  restoreOptimizerState,
  unpackColumns,
} from './update-protocol';
import { createPpoNetworks, updatePassOnBuffer } from './update';
import type { PpoTrainerSettings } from './trainer';

serveUpdates<UpdateWorkerSetup<PpoTrainerSettings>, UpdateRequest, UpdateReply>((setup) => {
  const spec = { observationSpecs: setup.observationSpecs, actionSpec: new ActionSpec(setup.continuousSize, setup.discreteBranches) };
  const { model, optimizer } = createPpoNetworks(setup.behaviorName, spec, setup.settings, setup.seed);
  // The same stream of shuffles as the trainer's own (threaded: false) updates.
  const random = new SeededRandom(setup.seed + 1);

  return async (request) => {
    if (request.optimizerState !== null) restoreOptimizerState(optimizer, request.optimizerState);
    if (request.normalizer !== null) model.normalizer!.copyFrom(request.normalizer);
    loadProviderNormalizers(optimizer.rewardProviders, request.rewardSignalNormalizers);
    try {
      const buffer = unpackColumns(request.columns);
      // Each read awaited, so that the same pass runs on WebGPU, which reads only asynchronously.
      const means = await runPassAsync(updatePassOnBuffer(optimizer, buffer, setup.settings.hyperparameters, () => random.next(), request.step));
      const addedToNormalizers = normalizerAdditions(optimizer.rewardProviders, request.rewardSignalNormalizers);
      const state = optimizerStateOf(optimizer);
      const transfer = [state.parameters, state.firstMoment, state.secondMoment].map((array) => array.buffer as ArrayBuffer);
      return { reply: { kind: 'updated', state, means: [...means], addedToNormalizers }, transfer };
    } catch (error) {
      if (error instanceof NonFiniteLossError) return { reply: { kind: 'nonFiniteLoss', message: error.message }, transfer: [] };
      throw error;
    }
  };
});
