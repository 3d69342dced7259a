/**
 * PPO's trainer for one behavior (upstream's ppo/trainer.py with the parts of rl_trainer.py and
 * trainer.py it relies on): turns each trajectory into buffer columns with value estimates,
 * per-signal rewards, GAE advantages and returns; updates the networks with the optimizer every
 * buffer_size experiences (num_epoch passes of shuffled minibatches of batch_size); writes the
 * summaries every summary_freq steps and asks for a checkpoint every checkpoint_interval steps.
 *
 * The policy that acts is the same model the optimizer updates: once an update is done, the
 * trainer hands the policy back through its policy queue, as upstream does.
 *
 * With threaded: true the updates run in a worker thread (../update-thread.ts) holding its own copy
 * of the networks and Adam: a full buffer is handed over and the environments keep stepping with
 * the current policy, their trajectories filling the next buffer; the worker's weights and Adam
 * state are copied back at the first advance() after it answers. At most one update is in flight.
 * A checkpoint taken meanwhile holds the state from before that update (weights and Adam state
 * always belong together); finishUpdate() waits for it, which the end of a run does before saving.
 */
import type { PPOSettings, TrainerSettings } from '../../config/settings';
import { BehaviorSpec } from '../../env/behavior-spec';
import { ActorCritic } from '../../networks/actor-critic';
import { STAT_KEYS } from '../../stats';
import type { ActingPolicy } from '../action-info';
import { ModelPolicy, RlTrainer, RlTrainerOptions, meanOf } from '../rl-trainer-base';
import { gae } from '../advantages';
import { AgentManagerQueue } from '../agent-manager-queue';
import { CriticMemories } from '../critic-memories';
import { AgentBuffer, BufferKey, RewardSignalKeys, isNextObservationKey } from '../buffer';
import { Trajectory } from '../trajectory';
import { NonFiniteLossError } from '../non-finite-loss';
import { PpoOptimizer } from './optimizer';
import { rewardBatchOf } from '../reward-signals/reward-provider';
import { PpoUpdateMeans, createPpoNetworks, updateOnBuffer } from './update';
import { UpdateReply, UpdateRequest, optimizerStateOf, packColumns, providerNormalizers, restoreUpdatedState } from './update-protocol';
import { InFlightUpdate, UpdateThread } from '../update-thread';
import type { Logger } from '../../common/logger';
import { BackendName, selectedBackend, updateBackend } from '../../networks/backend';
import { ppoUpdatesOnGpuRefusal } from '../gpu-updates';

/** A PPO behavior's settings (trainer_type: ppo). */
export type PpoTrainerSettings = Extract<TrainerSettings, { trainer_type: 'ppo' }>;

export type PpoTrainerOptions = RlTrainerOptions<PpoTrainerSettings>;

export class PpoTrainer extends RlTrainer<PpoTrainerSettings> {
  readonly model: ActorCritic;
  readonly optimizer: PpoOptimizer;
  readonly policy: ModelPolicy;
  /** The experiences waiting for the next update (upstream's update_buffer). */
  updateBuffer = new AgentBuffer();

  private readonly hyperparameters: PPOSettings;
  private readonly spec: BehaviorSpec;
  private readonly seed: number;
  private readonly logger: Logger | null;
  /** threaded: true: the worker that runs the updates, started at the first one. */
  private updateThread: UpdateThread<UpdateRequest, UpdateReply> | null = null;
  /** The update running in the worker, and its answer. */
  private readonly inFlight = new InFlightUpdate<UpdateReply>();
  /** Whether the worker's networks may differ from the acting ones (before its first update, after a restore). */
  private workerStateStale = true;
  /** The critic's memories per agent across trajectory pieces (with memory). */
  private readonly criticMemories: CriticMemories;

  constructor(options: PpoTrainerOptions) {
    super(options);
    this.hyperparameters = options.settings.hyperparameters;
    this.spec = options.spec;
    this.seed = options.seed;
    this.logger = options.logger ?? null;
    ({ model: this.model, optimizer: this.optimizer } = createPpoNetworks(options.behaviorName, options.spec, options.settings, options.seed, options.logger ?? null));
    this.policy = new ModelPolicy(this.model);
    this.criticMemories = new CriticMemories(this.model, this.sequenceLength);
  }

  /**
   * Processes every waiting trajectory and updates when the buffer is full (upstream's advance).
   * Returns true when the policy changed, after putting it in `policyQueue`.
   */
  advance(trajectoryQueue: AgentManagerQueue<Trajectory>, policyQueue: AgentManagerQueue<ActingPolicy>): boolean {
    this.processWaitingTrajectories(trajectoryQueue);
    if (this.settings.threaded) return this.advanceThreaded(policyQueue);
    if (!this.shouldStillTrain || this.updateBuffer.numExperiences < this.hyperparameters.buffer_size) return false;
    this.updatePolicy();
    policyQueue.put(this.policy);
    return true;
  }

  saveCheckpoint(file: string, step: number): void {
    this.optimizer.saveCheckpoint(file, step);
  }

  loadCheckpoint(file: string): number {
    this.workerStateStale = true;
    return this.optimizer.loadCheckpoint(file);
  }

  /** Waits for the update running in the worker, if any, and applies it (threaded: true). */
  async finishUpdate(): Promise<void> {
    await this.inFlight.settled();
    this.applyWorkerUpdate();
  }

  /** With threaded: true, resolves once the update in flight is done if the next buffer is already full. */
  async waitUntilReady(): Promise<void> {
    if (this.updateBuffer.numExperiences >= this.hyperparameters.buffer_size) await this.inFlight.settled();
  }

  /** Ends the update worker, if one was started; an update still in flight is dropped. */
  async close(): Promise<void> {
    await this.updateThread?.close();
  }

  /**
   * advance() with threaded: true: applies the update the worker finished, if any, then hands the
   * worker the buffer once it is full. Returns true when the policy changed.
   */
  private advanceThreaded(policyQueue: AgentManagerQueue<ActingPolicy>): boolean {
    const changed = this.applyWorkerUpdate();
    if (changed) policyQueue.put(this.policy);
    const full = this.updateBuffer.numExperiences >= this.hyperparameters.buffer_size;
    if (!this.inFlight.busy && this.shouldStillTrain && full) this.startWorkerUpdate();
    return changed;
  }

  /** The backend the worker updates on: the one chosen for updates, unless this behavior's observations keep it off WebGPU. */
  private workerBackend(): BackendName {
    const backend = updateBackend();
    if (backend === selectedBackend()) return backend;
    const refusal = ppoUpdatesOnGpuRefusal(this.spec, this.settings.network_settings.vis_encode_type);
    if (refusal === null) return backend;
    this.logger?.warning(`Behavior ${this.behaviorName}: ${refusal}; its updates run on the ${selectedBackend()} backend.`);
    return selectedBackend();
  }

  /** Hands the full buffer (its memory moves to the worker), the normalizer and the step to the worker. */
  private startWorkerUpdate(): void {
    this.updateThread ??= new UpdateThread(this.behaviorName, 'ppo', this.workerBackend(), {
      behaviorName: this.behaviorName,
      observationSpecs: this.spec.observationSpecs,
      continuousSize: this.spec.actionSpec.continuousSize,
      discreteBranches: this.spec.actionSpec.discreteBranches,
      settings: this.settings,
      seed: this.seed,
    });
    const { columns, transfer } = packColumns(this.updateBuffer);
    const normalizer = this.model.normalizer;
    const request: UpdateRequest = {
      step: this.step,
      columns,
      normalizer: normalizer === null ? null : { steps: normalizer.steps, mean: normalizer.mean, variance: normalizer.variance },
      optimizerState: this.workerStateStale ? optimizerStateOf(this.optimizer) : null,
      rewardSignalNormalizers: providerNormalizers(this.optimizer.rewardProviders),
    };
    this.workerStateStale = false;
    this.inFlight.start(this.updateThread.update(request, transfer));
    this.updateBuffer = new AgentBuffer();
    this.bookkeeping.policyUpdated();
  }

  /**
   * Copies the worker's weights and Adam state into the acting model once it answered; returns
   * whether it did. A failed update (a non-finite loss, a crashed worker) stops the run.
   */
  private applyWorkerUpdate(): boolean {
    const reply = this.inFlight.take();
    if (reply === null) return false;
    if (reply.kind === 'nonFiniteLoss') throw this.behaviorLossError(new NonFiniteLossError(reply.message));
    restoreUpdatedState(this.optimizer, reply.state, reply.addedToNormalizers);
    this.reportUpdate(new Map(reply.means));
    return true;
  }

  processTrajectory(trajectory: Trajectory): void {
    const buffer = trajectory.toAgentBuffer();
    const n = trajectory.length;
    const observations = trajectory.steps.obs;
    if (this.shouldStillTrain) this.model.updateNormalization(observations, n);

    // The critic's estimates at each step, and after the last one. After a true end nothing
    // follows, except for the signals that ignore dones (upstream's get_trajectory_value_estimates).
    const providers = this.optimizer.rewardProviders;
    const trulyEnded = trajectory.doneReached && !trajectory.interrupted;
    const anyIgnoresDone = [...providers.values()].some((provider) => provider.ignoreDone);
    const { values, nextValues } = this.criticMemories.estimate(trajectory, buffer, !trulyEnded || anyIgnoresDone);

    const environmentRewards = buffer.get(BufferKey.ENVIRONMENT_REWARDS).rows;
    this.bookkeeping.addRewards('environment', trajectory.agentId, environmentRewards);
    const rewardBatch = rewardBatchOf(buffer);
    const advantages = new Float32Array(n);
    const returns = new Float32Array(n);
    for (const signal of this.signals) {
      const provider = providers.get(signal)!;
      const rewards = Float32Array.from(provider.evaluate(rewardBatch), (r) => r * provider.strength);
      const signalValues = values[signal];
      buffer.get(RewardSignalKeys.valueEstimates(signal)).set(signalValues, 1);
      buffer.get(RewardSignalKeys.rewards(signal)).set(rewards, 1);
      this.stats.addStat(STAT_KEYS.valueEstimate(signal), meanOf(signalValues));
      this.bookkeeping.addRewards(signal, trajectory.agentId, rewards);

      const bootstrap = nextValues === null || (trulyEnded && !provider.ignoreDone) ? null : nextValues[signal][0];
      const estimate = gae(rewards, signalValues, bootstrap, provider.gamma, this.hyperparameters.lambd);
      buffer.get(RewardSignalKeys.returns(signal)).set(estimate.returns, 1);
      buffer.get(RewardSignalKeys.advantage(signal)).set(estimate.advantages, 1);
      for (let t = 0; t < n; t++) {
        advantages[t] += estimate.advantages[t] / this.signals.length;
        returns[t] += estimate.returns[t] / this.signals.length;
      }
    }
    buffer.get(BufferKey.ADVANTAGES).set(advantages, 1);
    buffer.get(BufferKey.DISCOUNTED_RETURNS).set(returns, 1);
    // With memory, as whole sequences, the last one padded (upstream's _append_to_update_buffer).
    if (this.shouldStillTrain) buffer.resequenceAndAppend(this.updateBuffer, { keys: this.updateKeys(buffer), trainingLength: this.sequenceLength });
    if (trajectory.doneReached) this.bookkeeping.endEpisode(trajectory.agentId);

    this.bookkeeping.stepsProcessed(this.step, n, this.shouldStillTrain, this.trainModel);
    this.step += n;
  }

  /**
   * The columns an update reads: all but the next observations, unless a reward signal trains on
   * them. Upstream keeps them regardless; leaving them out changes nothing PPO computes.
   */
  private updateKeys(buffer: AgentBuffer): string[] {
    const keys = buffer.keys();
    if ([...this.optimizer.rewardProviders.values()].some((provider) => provider.readsNextObservations === true)) return keys;
    return keys.filter((key) => !isNextObservationKey(key));
  }

  /** Training sequences' length: sequence_length with memory, else 1. */
  private get sequenceLength(): number {
    return this.settings.network_settings.memory?.sequence_length ?? 1;
  }

  /** Upstream's _update_policy, on this thread (threaded: false); a non-finite loss stops the run, naming the behavior. */
  private updatePolicy(): void {
    let means: PpoUpdateMeans;
    try {
      means = updateOnBuffer(this.optimizer, this.updateBuffer, this.hyperparameters, () => this.random.next(), this.step);
    } catch (error) {
      throw this.behaviorLossError(error);
    }
    this.reportUpdate(means);
    this.updateBuffer = new AgentBuffer();
    this.bookkeeping.policyUpdated();
  }

  private reportUpdate(means: PpoUpdateMeans): void {
    for (const [key, value] of means) this.stats.addStat(key, value);
  }
}
