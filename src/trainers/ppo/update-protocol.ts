/**
 * The messages between a threaded PPO trainer (main thread) and its update worker
 * (./update-worker.ts), and the packing of an update buffer into transferable columns (POCA's
 * worker, ../poca/update.ts, packs its buffers and keeps its reward signals' normalizers the same way).
 *
 * The worker owns a copy of the networks and of Adam. The main thread sends it each full update
 * buffer (its column memory transferred, not copied), the normalizer as it is now and the step;
 * the worker answers with the updated parameters and Adam state, which the main thread copies
 * into the acting model. The main thread's own copy is sent along only when it changed outside
 * the worker (the first update, a restored checkpoint).
 *
 * A reward provider's normalizer is fed on both sides while an update runs: by evaluate() on
 * the main thread's new trajectories and by update() in the worker. Each request carries the main
 * thread's statistics; the reply carries what the worker's updates added to them, which the main
 * thread merges into its own, so that the observations of both sides count, as without threads.
 */
import type { BackendName } from '../../networks/backend';
import type { BehaviorSpec, ObservationSpec } from '../../env/behavior-spec';
import { AgentBuffer } from '../buffer';
import type { CheckpointArray } from '../../networks/checkpoint-file';
import type { NormalizerState } from '../../networks/normalizer';
import type { RewardProvider } from '../reward-signals/reward-provider';
import { loadProvidersStateArrays, providersStateArrays } from '../reward-signals/reward-provider';
import { behavioralCloningStateArrays, loadBehavioralCloningStateArrays } from '../behavioral-cloning';
import type { PpoOptimizer, PpoUpdateStats } from './optimizer';
import type { PpoTrainerSettings } from './trainer';

/** What a worker builds its networks from (workerData): PPO's and POCA's. */
export interface UpdateWorkerSetup<Settings = PpoTrainerSettings> {
  readonly backend: BackendName;
  readonly behaviorName: string;
  readonly observationSpecs: readonly ObservationSpec[];
  readonly continuousSize: number;
  readonly discreteBranches: readonly number[];
  readonly settings: Settings;
  readonly seed: number;
}

/** A worker's setup for a behavior, but the backend (UpdateThread adds the one it runs on). */
export function workerSetupFor<Settings>(behaviorName: string, spec: BehaviorSpec, settings: Settings, seed: number): Omit<UpdateWorkerSetup<Settings>, 'backend'> {
  return {
    behaviorName,
    observationSpecs: spec.observationSpecs,
    continuousSize: spec.actionSpec.continuousSize,
    discreteBranches: spec.actionSpec.discreteBranches,
    settings,
    seed,
  };
}

/** Weights and Adam state: what an update changes. */
export interface OptimizerState {
  readonly parameters: Float32Array;
  readonly firstMoment: Float32Array;
  readonly secondMoment: Float32Array;
  readonly adamStep: number;
  /** The reward providers' weights, optimizer state and normalizers (upstream trains them with the policy). */
  readonly rewardSignals: ReadonlyArray<[string, CheckpointArray]>;
  /** Behavioral cloning's optimizer state and learning rate, when configured. */
  readonly behavioralCloning: ReadonlyArray<[string, CheckpointArray]>;
}

/** A copy of the optimizer's weights and Adam state (copies, so that they can be transferred). */
export function optimizerStateOf(optimizer: PpoOptimizer): OptimizerState {
  const { adam, model } = optimizer;
  return {
    parameters: model.parameters.slice(),
    firstMoment: adam.firstMoment.slice(),
    secondMoment: adam.secondMoment.slice(),
    adamStep: adam.step,
    rewardSignals: providersStateArrays(optimizer.rewardProviders).map(([key, values]) => [key, values.slice()]),
    behavioralCloning: behavioralCloningStateArrays(optimizer.behavioralCloning).map(([key, values]) => [key, values.slice()]),
  };
}

/** Puts an OptimizerState into the optimizer's model and Adam. */
export function restoreOptimizerState(optimizer: PpoOptimizer, state: OptimizerState): void {
  const { adam, model } = optimizer;
  model.parameters.set(state.parameters);
  adam.firstMoment.set(state.firstMoment);
  adam.secondMoment.set(state.secondMoment);
  adam.step = state.adamStep;
  model.parametersChanged();
  loadProvidersStateArrays(optimizer.rewardProviders, new Map(state.rewardSignals));
  loadBehavioralCloningStateArrays(optimizer.behavioralCloning, new Map(state.behavioralCloning));
}

/** A copy of each reward provider's normalizer, by signal (providers without one are left out). */
export function providerNormalizers(providers: ReadonlyMap<string, RewardProvider>): Array<[string, NormalizerState]> {
  const states: Array<[string, NormalizerState]> = [];
  for (const [signal, provider] of providers) if (provider.normalizer) states.push([signal, provider.normalizer.state()]);
  return states;
}

/** Sets each reward provider's normalizer to the state given for its signal. */
export function loadProviderNormalizers(providers: ReadonlyMap<string, RewardProvider>, states: ReadonlyArray<[string, NormalizerState]>): void {
  for (const [signal, state] of states) normalizerOf(providers, signal).copyFrom(state);
}

/** The worker's side: what each normalizer gained since `before` (providerNormalizers() then). */
export function normalizerAdditions(providers: ReadonlyMap<string, RewardProvider>, before: ReadonlyArray<[string, NormalizerState]>): Array<[string, NormalizerState]> {
  return before.map(([signal, state]) => [signal, normalizerOf(providers, signal).addedSince(state)]);
}

/**
 * The main thread's side: the worker's weights and Adam state replace its own, while each
 * provider's normalizer keeps what this thread's evaluate() fed it and gains the worker's additions.
 */
export function restoreUpdatedState(optimizer: PpoOptimizer, state: OptimizerState, addedToNormalizers: ReadonlyArray<[string, NormalizerState]>): void {
  keepingEvaluatedNormalizers(optimizer.rewardProviders, addedToNormalizers, () => restoreOptimizerState(optimizer, state));
}

/** Runs `restore` (which puts the worker's state in place), then gives each provider's normalizer back what this thread fed it, plus the worker's additions. */
export function keepingEvaluatedNormalizers(
  providers: ReadonlyMap<string, RewardProvider>,
  addedToNormalizers: ReadonlyArray<[string, NormalizerState]>,
  restore: () => void,
): void {
  const evaluated = providerNormalizers(providers);
  restore();
  loadProviderNormalizers(providers, evaluated);
  for (const [signal, added] of addedToNormalizers) normalizerOf(providers, signal).merge(added);
}

function normalizerOf(providers: ReadonlyMap<string, RewardProvider>, signal: string): NonNullable<RewardProvider['normalizer']> {
  const normalizer = providers.get(signal)?.normalizer;
  if (!normalizer) throw new Error(`The reward signal ${signal} has no normalizer on this side of the update worker.`);
  return normalizer;
}

/** One buffer column: `data` holds its rows, one after another. */
export interface PackedColumn {
  readonly key: string;
  readonly width: number;
  readonly data: Float32Array;
}

export interface UpdateRequest {
  /** The training step the schedules are read at. */
  readonly step: number;
  readonly columns: readonly PackedColumn[];
  readonly normalizer: NormalizerState | null;
  /** The main thread's weights and Adam state, when the worker's copy is stale. */
  readonly optimizerState: OptimizerState | null;
  /** The reward providers' normalizers on the main thread now, by signal. */
  readonly rewardSignalNormalizers: ReadonlyArray<[string, NormalizerState]>;
}

export type UpdateReply =
  | {
      readonly kind: 'updated';
      readonly state: OptimizerState;
      readonly means: ReadonlyArray<[keyof PpoUpdateStats | string, number]>;
      /** By signal, the statistics of the observations the worker's updates fed its normalizer. */
      readonly addedToNormalizers: ReadonlyArray<[string, NormalizerState]>;
    }
  /** The optimizer's NonFiniteLossError message: nothing of the update reaches the acting model. */
  | { readonly kind: 'nonFiniteLoss'; readonly message: string };

/**
 * The columns of `buffer` and the memory to transfer with them. The buffer must not be used
 * afterwards: its memory moves to the worker. Zero-width columns (an absent action part) are left
 * out: the update reads them as empty.
 */
export function packColumns(buffer: AgentBuffer): { columns: PackedColumn[]; transfer: ArrayBuffer[] } {
  const columns: PackedColumn[] = [];
  for (const key of buffer.keys()) {
    const column = buffer.get(key);
    if (column.width > 0) columns.push({ key, width: column.width, data: column.rows });
  }
  return { columns, transfer: columns.map((c) => c.data.buffer as ArrayBuffer) };
}

/** The buffer the packed columns came from, on their memory (moved to this thread, so not copied). */
export function unpackColumns(columns: readonly PackedColumn[]): AgentBuffer {
  const buffer = new AgentBuffer();
  for (const { key, width, data } of columns) buffer.adopt(key, data, width);
  return buffer;
}
