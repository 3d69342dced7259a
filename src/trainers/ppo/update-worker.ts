/**
 * The worker thread of a threaded PPO trainer (threaded: true): it owns a copy of the behavior's
 * networks and Adam state and runs each update the main thread hands it (./update-protocol.ts),
 * so that the environments keep stepping meanwhile. It runs the models on the backend the main
 * thread chose for the updates: WebGPU's when one was chosen (backend.ts), while acting stays on
 * the main thread. An error other than a non-finite loss ends the worker: the main thread reports it.
 */
import { parentPort, workerData } from 'worker_threads';
import type { Logger } from '../../common/logger';
import { SeededRandom } from '../../common/random';
import { ActionSpec } from '../../env/behavior-spec';
import { selectBackend } from '../../networks/backend';
import { NonFiniteLossError } from '../non-finite-loss';
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
import { runPassAsync } from '../../networks/tensor-io';

/** The main thread already said which backend runs and why; the worker says nothing. */
const SILENT: Logger = { debug: () => undefined, info: () => undefined, warning: () => undefined, error: () => undefined };

async function start(setup: UpdateWorkerSetup): Promise<(request: UpdateRequest) => Promise<UpdateReply>> {
  await selectBackend(setup.backend, SILENT);
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
      return { kind: 'updated', state: optimizerStateOf(optimizer), means: [...means], addedToNormalizers };
    } catch (error) {
      if (error instanceof NonFiniteLossError) return { kind: 'nonFiniteLoss', message: error.message };
      throw error;
    }
  };
}

const port = parentPort!;
const started = start(workerData as UpdateWorkerSetup);
port.on('message', (request: UpdateRequest) => {
  started
    .then(async (update) => {
      const reply = await update(request);
      const state = reply.kind === 'updated' ? reply.state : null;
      const transfer = state === null ? [] : [state.parameters, state.firstMoment, state.secondMoment];
      port.postMessage(reply, transfer.map((array) => array.buffer as ArrayBuffer));
    })
    .catch((error: unknown) => {
      // Rethrown outside the promise, so that it ends the worker with an 'error' event on the main thread.
      setImmediate(() => {
        throw error;
      });
    });
});
