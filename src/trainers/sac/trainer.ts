/**
 * SAC's trainer for one behavior (upstream's sac/trainer.py with the parts of rl_trainer.py it
 * relies on): every trajectory goes into the replay buffer; once buffer_init_steps experiences
 * have been processed, the trainer runs one update on a minibatch of batch_size drawn from the
 * buffer for every steps_per_update new steps, interleaved with the environments' steps as
 * upstream's are (updates happen in advance(), between the trajectories it processes).
 *
 * With network_settings.memory, as upstream: the critic's memories run on per agent across
 * trajectory pieces (critic_memory, ../critic-memories.ts), each trajectory enters the replay
 * buffer as whole sequences of sequence_length steps, the last one padded (resequence_and_append),
 * and minibatches are batch_size / sequence_length whole sequences.
 *
 * The policy that acts is the model the optimizer updates; after an advance() that updated it,
 * it goes back through the policy queue.
 *
 * With threaded: true the updates run in a worker thread (./update.ts, ../update-thread.ts) on
 * the update backend (WebGPU's when chosen) while the environments keep stepping: advance()
 * draws the minibatches the new steps call for, as it would update on them, and hands them over
 * together; the worker's networks and Adam state are copied into the acting model at the first
 * advance() after it answers. At most one request is in flight; the steps that arrive meanwhile
 * call for the next one, so the number of updates per step is the same. Reward signals are
 * evaluated and trained on this thread. A checkpoint taken meanwhile holds the state from before
 * the request; finishUpdate() waits for it. behavioral_cloning's round after each update runs
 * in the worker with it.
 */
import * as path from 'path';
import * as fs from 'fs';
import type { SACSettings, TrainerSettings } from '../../config/settings';
import { BehaviorSpec, observationSize } from '../../env/behavior-spec';
import type { Logger } from '../../common/logger';
import { ActorCritic } from '../../networks/actor-critic';
import { STAT_KEYS } from '../../stats';
import type { ActingPolicy } from '../action-info';
import type { AgentManagerQueue } from '../agent-manager-queue';
import { ModelPolicy, RlTrainer, RlTrainerOptions, meanOf } from '../rl-trainer-base';
import type { Trajectory } from '../trajectory';
import { AgentBuffer, BufferKey, nextObservationKey, observationKey } from '../buffer';
import { CriticMemories } from '../critic-memories';
import { SacOptimizer } from './optimizer';
import { runPass } from '../../networks/tensor-io';
import { SacMinibatch, SacUpdateReply, SacUpdateRequest, createSacModel, minibatchMemory } from './update';
import { InFlightUpdate, UpdateThread } from '../update-thread';
import { workerSetupFor } from '../ppo/update-protocol';
import { NonFiniteLossError } from '../non-finite-loss';
import { updateBackend } from '../../networks/backend';
import { ReplayBuffer, ReplayRows } from './replay-buffer';
import { RewardBatch, RewardProvider, rewardBatchOf } from '../reward-signals/reward-provider';
import { createRewardProviders } from '../reward-signals/registry';
import { createBehavioralCloning } from '../behavioral-cloning';

/** A SAC behavior's settings (trainer_type: sac). */
export type SacTrainerSettings = Extract<TrainerSettings, { trainer_type: 'sac' }>;

/** The replay buffer's file beside a behavior's checkpoints (upstream's last_replay_buffer.hdf5). */
export const REPLAY_BUFFER_FILE = 'last_replay_buffer.ckpt';

export type SacTrainerOptions = RlTrainerOptions<SacTrainerSettings>;

export class SacTrainer extends RlTrainer<SacTrainerSettings> {
  readonly model: ActorCritic;
  readonly optimizer: SacOptimizer;
  readonly policy: ModelPolicy;
  readonly replayBuffer: ReplayBuffer;

  private readonly hyperparameters: SACSettings;
  private readonly logger: Logger | null;
  /** Updates done plus one (upstream's update_steps, which starts at 1 so as not to divide by 0). */
  private updateSteps = 1;
  /** Reward-signal updates done plus one (upstream's reward_signal_update_steps). */
  private rewardSignalUpdateSteps = 1;
  /** The reward signals' providers, in the model's rewardSignals order. */
  private readonly rewardProviders: Map<string, RewardProvider>;
  /** Rows per training sequence: sequence_length with memory, else 1. */
  private readonly sequenceLength: number;
  private readonly criticMemories: CriticMemories;
  private readonly spec: BehaviorSpec;
  private readonly seed: number;
  /** Whether the updates run in a worker thread (threaded: true). */
  private readonly threaded: boolean;
  /** The worker that runs the updates, started at the first one. */
  private updateThread: UpdateThread<SacUpdateRequest, SacUpdateReply> | null = null;
  /** The request running in the worker, and its answer. */
  private readonly inFlight = new InFlightUpdate<SacUpdateReply>();
  /** Whether the worker's networks may differ from the acting ones (before its first update, after a restore). */
  private workerStateStale = true;

  constructor(options: SacTrainerOptions) {
    super(options);
    const { settings, spec } = options;
    this.hyperparameters = settings.hyperparameters;
    this.logger = options.logger ?? null;
    this.spec = spec;
    this.seed = options.seed;
    this.model = createSacModel(spec, settings, options.seed);
    this.rewardProviders = createRewardProviders(settings.reward_signals, options.behaviorName, spec, options.seed, options.logger ?? null);
    this.optimizer = new SacOptimizer(this.model, spec, {
      hyperparameters: this.hyperparameters,
      maxSteps: settings.max_steps,
      signals: this.signals.map((name) => this.rewardProviders.get(name)!),
      rewardProviders: this.rewardProviders,
      behavioralCloning: createBehavioralCloning(this.model, options.behaviorName, settings, options.seed),
      seed: options.seed,
    });
    this.policy = new ModelPolicy(this.model);
    const memory = settings.network_settings.memory;
    this.sequenceLength = memory?.sequence_length ?? 1;
    this.criticMemories = new CriticMemories(this.model, this.sequenceLength);
    const branches = spec.actionSpec.discreteBranches;
    this.replayBuffer = new ReplayBuffer(
      {
        observationSizes: spec.observationSpecs.map(observationSize),
        continuousSize: spec.actionSpec.continuousSize,
        branchCount: branches.length,
        maskWidth: branches.reduce((a, b) => a + b, 0),
        ...(memory === null ? {} : { memorySize: memory.memory_size, sequenceLength: memory.sequence_length }),
      },
      this.hyperparameters.buffer_size,
    );
    this.threaded = settings.threaded;
  }

  /**
   * Processes every waiting trajectory, then runs the updates the new steps call for (upstream's
   * advance). Returns true when the policy changed, after putting it in `policyQueue`.
   */
  advance(trajectoryQueue: AgentManagerQueue<Trajectory>, policyQueue: AgentManagerQueue<ActingPolicy>): boolean {
    this.processWaitingTrajectories(trajectoryQueue);
    if (this.threaded) return this.advanceThreaded(policyQueue);
    if (!this.shouldStillTrain || !this.readyToUpdate() || !this.updatePolicy()) return false;
    policyQueue.put(this.policy);
    return true;
  }

  /** Waits for the request running in the worker, if any, and applies it (threaded: true). */
  async finishUpdate(): Promise<void> {
    await this.inFlight.settled();
    this.applyWorkerUpdate();
  }

  /**
   * With threaded: true, resolves once the request in flight is done if the steps since already
   * call for another update, so that the policy acting never lags more than one request behind.
   */
  async waitUntilReady(): Promise<void> {
    if (this.inFlight.busy && this.shouldStillTrain && this.readyToUpdate() && this.updateDue()) await this.inFlight.settled();
  }

  /** Ends the update worker, if one was started; a request still in flight is dropped. */
  async close(): Promise<void> {
    await this.updateThread?.close();
  }

  /** Writes the networks and optimizers, and with save_replay_buffer the replay buffer beside them. */
  saveCheckpoint(file: string, step: number): void {
    this.optimizer.saveCheckpoint(file, step);
    if (!this.hyperparameters.save_replay_buffer) return;
    const bufferFile = path.join(path.dirname(file), REPLAY_BUFFER_FILE);
    this.replayBuffer.save(bufferFile);
    this.logger?.info(`Saved the experience replay buffer of ${this.behaviorName} (${this.replayBuffer.size} experiences) to ${bufferFile}.`);
  }

  /**
   * Restores a checkpoint, and when resuming with save_replay_buffer, the replay buffer saved
   * beside it when there is one (as upstream, a missing one only warns; --initialize-from starts
   * with an empty buffer). Returns the step it was saved at.
   */
  loadCheckpoint(file: string, options: { readonly resume?: boolean } = {}): number {
    const step = this.optimizer.loadCheckpoint(file);
    this.workerStateStale = true;
    // As upstream on resume: the updates are assumed to have kept up with the steps.
    this.updateSteps = Math.max(1, Math.trunc(step / this.hyperparameters.steps_per_update));
    this.rewardSignalUpdateSteps = Math.max(1, Math.trunc(step / this.hyperparameters.reward_signal_steps_per_update));
    if (this.hyperparameters.save_replay_buffer && options.resume === true) {
      const bufferFile = path.join(path.dirname(file), REPLAY_BUFFER_FILE);
      if (fs.existsSync(bufferFile)) {
        this.replayBuffer.load(bufferFile);
        this.logger?.info(`Loaded the experience replay buffer of ${this.behaviorName} (${this.replayBuffer.size} experiences) from ${bufferFile}.`);
      } else {
        this.logger?.warning(`No replay buffer to load for ${this.behaviorName} (${bufferFile} does not exist): starting with an empty one.`);
      }
    }
    return step;
  }

  processTrajectory(trajectory: Trajectory): void {
    const n = trajectory.length;
    const steps = trajectory.steps;
    if (this.shouldStillTrain) this.model.updateNormalization(steps.obs, n);

    this.bookkeeping.addRewards('environment', trajectory.agentId, steps.rewards);
    // Value estimates are only reported; with memory they also record the critic's memories.
    const buffer = trajectory.toAgentBuffer();
    const { values } = this.criticMemories.estimate(trajectory, buffer, false);
    // Each signal's rewards here are only reported: updates evaluate them again on each minibatch.
    const rewardBatch = rewardBatchOf(buffer);
    for (const signal of this.signals) {
      const provider = this.rewardProviders.get(signal)!;
      this.bookkeeping.addRewards(signal, trajectory.agentId, Float32Array.from(provider.evaluate(rewardBatch), (r) => r * provider.strength));
      this.stats.addStat(STAT_KEYS.signalValue(signal), meanOf(values[signal]));
    }
    if (this.shouldStillTrain) this.replayBuffer.add(replayRows(trajectory, buffer, this.sequenceLength, this.model.memorySize > 0));
    if (trajectory.doneReached) this.bookkeeping.endEpisode(trajectory.agentId);

    this.bookkeeping.stepsProcessed(this.step, n, this.shouldStillTrain, this.trainModel);
    this.step += n;
  }

  /** Upstream's _is_ready_update: a minibatch's worth of experiences, and buffer_init_steps reached. */
  private readyToUpdate(): boolean {
    return this.replayBuffer.size >= this.hyperparameters.batch_size && this.step >= this.hyperparameters.buffer_init_steps;
  }

  /** Whether the steps since the last update call for another (upstream's _update_sac_policy loop condition). */
  private updateDue(): boolean {
    const h = this.hyperparameters;
    return (this.step - h.buffer_init_steps) / this.updateSteps > h.steps_per_update;
  }

  /**
   * The minibatches of the updates the steps since the last one call for: one per
   * steps_per_update steps since buffer_init_steps, each drawn from the replay buffer when the
   * update before it is done (the loop's body), with every signal's rewards evaluated afresh on
   * it, as upstream's.
   */
  private *dueMinibatches(): Generator<SacMinibatch> {
    while (this.updateDue()) {
      const rows = this.replayBuffer.sample(this.hyperparameters.batch_size, () => this.random.next());
      const rewardBatch = replayRewardBatch(rows);
      yield { rows, signalRewards: this.signals.map((signal) => this.rewardProviders.get(signal)!.evaluate(rewardBatch)) };
      this.updateSteps++;
    }
  }

  /** Upstream's _update_sac_policy, on this thread: the updates due, then the reward signals'. Returns whether any update ran. */
  private updatePolicy(): boolean {
    this.bookkeeping.policyUpdated();
    let updated = false;
    for (const { rows, signalRewards } of this.dueMinibatches()) {
      try {
        this.reportUpdate(runPass(this.optimizer.updateAndClonePass(rows, this.step, signalRewards)));
      } catch (error) {
        throw this.behaviorLossError(error);
      }
      updated = true;
    }
    this.updateRewardSignals();
    return updated;
  }

  private reportUpdate(stats: Readonly<Record<string, number>>): void {
    for (const [key, value] of Object.entries(stats)) this.stats.addStat(key, value);
  }

  /**
   * advance() with threaded: true: applies the worker's answer, if one came, then hands it the
   * updates now due, if it is free. Returns true when the policy changed.
   */
  private advanceThreaded(policyQueue: AgentManagerQueue<ActingPolicy>): boolean {
    const changed = this.applyWorkerUpdate();
    if (changed) policyQueue.put(this.policy);
    if (!this.inFlight.busy && this.shouldStillTrain && this.readyToUpdate()) this.startWorkerUpdate();
    return changed;
  }

  /** Draws the updates due and hands them to the worker with the normalizer; trains the reward signals here. */
  private startWorkerUpdate(): void {
    this.bookkeeping.policyUpdated();
    const minibatches = [...this.dueMinibatches()];
    this.updateRewardSignals();
    if (minibatches.length === 0) return;
    this.updateThread ??= new UpdateThread(this.behaviorName, 'sac', updateBackend(), {
      ...workerSetupFor(this.behaviorName, this.spec, this.settings, this.seed),
      signals: this.optimizer.settings.signals.map(({ gamma, strength, ignoreDone }) => ({ gamma, strength, ignoreDone })),
    });
    const request: SacUpdateRequest = {
      step: this.step,
      minibatches,
      normalizer: this.model.normalizer?.state() ?? null,
      state: this.workerStateStale ? this.optimizer.updatedState() : null,
    };
    this.workerStateStale = false;
    this.inFlight.start(this.updateThread.update(request, minibatchMemory(minibatches)));
  }

  /**
   * Copies the worker's networks and Adam state into the acting model once it answered and
   * reports each update's statistics; returns whether it did. A non-finite loss or a crashed worker stops the run.
   */
  private applyWorkerUpdate(): boolean {
    const reply = this.inFlight.take();
    if (reply === null) return false;
    if (reply.kind === 'nonFiniteLoss') throw this.behaviorLossError(new NonFiniteLossError(reply.message));
    this.optimizer.loadUpdatedState(reply.state);
    for (const stats of reply.stats) this.reportUpdate(stats);
    return true;
  }

  /**
   * Upstream's _update_reward_signals: the signals that train get one update on a minibatch of
   * their own per reward_signal_steps_per_update steps since buffer_init_steps. Without such
   * signals nothing is sampled, so that the replay draws stay those of the policy updates.
   */
  private updateRewardSignals(): void {
    const h = this.hyperparameters;
    const trained = [...this.rewardProviders.values()].filter((provider) => provider.trains);
    if (trained.length === 0) return;
    while ((this.step - h.buffer_init_steps) / this.rewardSignalUpdateSteps > h.reward_signal_steps_per_update) {
      const batch = replayRewardBatch(this.replayBuffer.sample(h.batch_size, () => this.random.next()));
      for (const provider of trained) {
        for (const [key, value] of Object.entries(provider.update(batch))) this.stats.addStat(key, value);
      }
      this.rewardSignalUpdateSteps++;
    }
  }
}

/**
 * A trajectory's steps (`buffer`, its toAgentBuffer() with the critic's memories) as replay
 * rows, whole sequences of `sequenceLength` with the last one padded (upstream's
 * resequence_and_append: zeros, the action masks repeated, mask 0). A step is done when the
 * episode truly ended there; when it was interrupted (max steps), the last step's next
 * observation is the observation itself and it is not done, so that the Q target bootstraps from
 * it, as upstream.
 */
function replayRows(trajectory: Trajectory, buffer: AgentBuffer, sequenceLength: number, memory: boolean): ReplayRows {
  const n = trajectory.length;
  const observations = trajectory.steps.obs.map((_, k) => observationKey(k));
  const nextObservations = observations.map((_, k) => nextObservationKey(k));
  if (trajectory.interrupted) {
    observations.forEach((key, k) => buffer.get(nextObservations[k]).row(n - 1).set(buffer.get(key).row(n - 1)));
    buffer.get(BufferKey.DONE).row(n - 1)[0] = 0;
  }
  const keys = [
    ...observations,
    ...nextObservations,
    BufferKey.CONTINUOUS_ACTION,
    BufferKey.DISCRETE_ACTION,
    BufferKey.ACTION_MASK,
    BufferKey.ENVIRONMENT_REWARDS,
    BufferKey.DONE,
    ...(memory ? [BufferKey.MEMORY, BufferKey.CRITIC_MEMORY, BufferKey.MASKS] : []),
  ].filter((key) => buffer.has(key));
  const rows = new AgentBuffer();
  buffer.resequenceAndAppend(rows, { keys, trainingLength: sequenceLength });
  const column = (key: string): Float32Array => (rows.has(key) ? rows.get(key).rows : new Float32Array(0));
  return {
    count: rows.numExperiences,
    observations: observations.map(column),
    nextObservations: nextObservations.map(column),
    continuousActions: column(BufferKey.CONTINUOUS_ACTION),
    discreteActions: Int32Array.from(column(BufferKey.DISCRETE_ACTION)),
    actionMasks: column(BufferKey.ACTION_MASK),
    rewards: column(BufferKey.ENVIRONMENT_REWARDS),
    dones: column(BufferKey.DONE),
    ...(memory ? { memories: column(BufferKey.MEMORY), criticMemories: column(BufferKey.CRITIC_MEMORY), masks: column(BufferKey.MASKS) } : {}),
  };
}

/** A replay minibatch as the reward providers read it. */
function replayRewardBatch(rows: ReplayRows): RewardBatch {
  return {
    count: rows.count,
    observations: rows.observations,
    nextObservations: rows.nextObservations,
    environmentRewards: rows.rewards,
    continuousActions: rows.continuousActions,
    discreteActions: rows.discreteActions,
    dones: rows.dones,
    masks: rows.masks,
  };
}
