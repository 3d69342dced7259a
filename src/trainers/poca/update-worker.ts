/**
 * The worker thread of a threaded POCA trainer (threaded: true): it owns a copy of the actor, the
 * critic and their optimizer state and runs each update the main thread hands it (./update.ts),
 * so that the environments keep stepping meanwhile (../update-thread.ts runs the loop). It runs
 * the networks on the backend the main thread chose for the updates, WebGPU's included, each
 * read awaited.
 */
import { SeededRandom } from '../../common/random';
import { ActionSpec } from '../../env/behavior-spec';
import { runPassAsync } from '../../networks/tensor-io';
import { NonFiniteLossError } from '../non-finite-loss';
import { UpdateWorkerSetup, loadProviderNormalizers, normalizerAdditions, unpackColumns } from '../ppo/update-protocol';
import { serveUpdates } from '../update-thread';
import type { PocaTrainerSettings } from './trainer';
import { PocaUpdateReply, PocaUpdateRequest, createPocaNetworks, restoreFedState, updatePocaPassOnBuffer } from './update';

serveUpdates<UpdateWorkerSetup<PocaTrainerSettings>, PocaUpdateRequest, PocaUpdateReply>((setup) => {
  const spec = { observationSpecs: setup.observationSpecs, actionSpec: new ActionSpec(setup.continuousSize, setup.discreteBranches) };
  const networks = createPocaNetworks(setup.behaviorName, spec, setup.settings, setup.seed);
  const { optimizer } = networks;
  // The same stream of shuffles as the trainer's own (threaded: false) updates.
  const random = new SeededRandom(setup.seed + 1);

  return async (request) => {
    if (request.state !== null) optimizer.loadState(request.state);
    // The main thread's statistics replace the worker's, which are older.
    restoreFedState(networks, request.fed);
    loadProviderNormalizers(optimizer.rewardProviders, request.rewardSignalNormalizers);
    try {
      // Each read awaited, so that the same pass runs on WebGPU, which reads only asynchronously.
      const means = await runPassAsync(updatePocaPassOnBuffer(optimizer, unpackColumns(request.columns), setup.settings, () => random.next(), request.step));
      const addedToNormalizers = normalizerAdditions(optimizer.rewardProviders, request.rewardSignalNormalizers);
      return { reply: { kind: 'updated', state: optimizer.saveState(request.step), means: [...means], addedToNormalizers }, transfer: [] };
    } catch (error) {
      if (error instanceof NonFiniteLossError) return { reply: { kind: 'nonFiniteLoss', message: error.message }, transfer: [] };
      throw error;
    }
  };
});
