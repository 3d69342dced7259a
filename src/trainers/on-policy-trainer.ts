/**
 * What PPO's and POCA's trainers share (upstream's OnPolicyTrainer): the update buffer, an update
 * once it is full, on this thread or, with threaded: true, in an update worker (./update-thread.ts)
 * holding its own copy of the networks and Adam.
 *
 * Threaded, a full buffer is handed over and the environments keep stepping with the current
 * policy, their trajectories filling the next buffer; the worker's state is put into the acting
 * networks at the first advance() after it answers. At most one update is in flight. A checkpoint
 * taken meanwhile holds the state from before that update (weights and Adam state always belong
 * together); finishUpdate() waits for it, which the end of a run does before saving. The worker's
 * copy of the networks goes along with a request only when it is stale: before its first update,
 * after a restored checkpoint. The worker runs on the backend chosen for updates (WebGPU's
 * included: ./gpu-updates.ts).
 *
 * A trainer supplies the few steps that differ (the hooks below): when the buffer is full, the
 * update on this thread, and the worker's request and reply.
 */
import type { TrainerSettings } from '../config/settings';
import type { BehaviorSpec } from '../env/behavior-spec';
import { updateBackend } from '../networks/backend';
import type { ActingPolicy } from './action-info';
import { AgentManagerQueue } from './agent-manager-queue';
import { AgentBuffer } from './buffer';
import { NonFiniteLossError } from './non-finite-loss';
import type { CheckpointedOptimizer } from './optimizer-checkpoint';
import type { PpoUpdateMeans } from './ppo/update';
import { PackedColumn, packColumns, workerSetupFor } from './ppo/update-protocol';
import { RlTrainer, RlTrainerOptions } from './rl-trainer-base';
import { Trajectory } from './trajectory';
import { InFlightUpdate, ThreadedTrainerKind, UpdateThread } from './update-thread';

/** An update worker's answer: the updated state with the update's means, or a non-finite loss (nothing of it applies). */
export type OnPolicyReply = { readonly kind: 'updated'; readonly means: ReadonlyArray<[string, number]> } | { readonly kind: 'nonFiniteLoss'; readonly message: string };

export abstract class OnPolicyTrainer<Settings extends TrainerSettings, Request, Reply extends OnPolicyReply> extends RlTrainer<Settings> {
  /** The experiences waiting for the next update (upstream's update_buffer). */
  updateBuffer = new AgentBuffer();
  abstract readonly optimizer: CheckpointedOptimizer;

  protected readonly spec: BehaviorSpec;
  protected readonly seed: number;
  /** threaded: true: the worker that runs the updates, started at the first one. */
  private updateThread: UpdateThread<Request, Reply> | null = null;
  /** The update running in the worker, and its answer. */
  private readonly inFlight = new InFlightUpdate<Reply>();
  /** Whether the worker's networks may differ from the acting ones. */
  private workerStateStale = true;

  constructor(
    options: RlTrainerOptions<Settings>,
    /** The folder its worker script is built in. */
    private readonly workerKind: ThreadedTrainerKind,
  ) {
    super(options);
    this.spec = options.spec;
    this.seed = options.seed;
  }

  /** Whether the update buffer holds enough experiences for an update. */
  protected abstract get bufferFull(): boolean;
  /** One update of the networks on the update buffer, on this thread (threaded: false); its statistics' means. */
  protected abstract updateOnThisThread(): PpoUpdateMeans;
  /** The worker's request to update on `columns` (the update buffer's), with this side's networks when `withNetworks`. */
  protected abstract workerRequest(columns: readonly PackedColumn[], withNetworks: boolean): Request;
  /** Puts the worker's updated state into the acting networks. */
  protected abstract applyWorkerState(reply: Extract<Reply, { kind: 'updated' }>): void;

  /**
   * Processes every waiting trajectory and updates when the buffer is full (upstream's advance).
   * Returns true when the policy changed, after putting it in `policyQueue`.
   */
  advance(trajectoryQueue: AgentManagerQueue<Trajectory>, policyQueue: AgentManagerQueue<ActingPolicy>): boolean {
    this.processWaitingTrajectories(trajectoryQueue);
    const changed = this.settings.threaded ? this.applyWorkerUpdate() : this.shouldStillTrain && this.bufferFull && this.updateHere();
    if (changed) policyQueue.put(this.policy);
    if (this.settings.threaded && !this.inFlight.busy && this.shouldStillTrain && this.bufferFull) this.startWorkerUpdate();
    return changed;
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
    if (this.bufferFull) await this.inFlight.settled();
  }

  /** Ends the update worker, if one was started; an update still in flight is dropped. */
  async close(): Promise<void> {
    await this.updateThread?.close();
  }

  /** Upstream's _update_policy on this thread; a non-finite loss stops the run, naming the behavior. */
  private updateHere(): true {
    let means: PpoUpdateMeans;
    try {
      means = this.updateOnThisThread();
    } catch (error) {
      throw this.behaviorLossError(error);
    }
    this.reportUpdate(means);
    this.updateBuffer = new AgentBuffer();
    this.bookkeeping.policyUpdated();
    return true;
  }

  /** Hands the full buffer (its memory moves to the worker) to the worker. */
  private startWorkerUpdate(): void {
    this.updateThread ??= this.startUpdateThread();
    const { columns, transfer } = packColumns(this.updateBuffer);
    const request = this.workerRequest(columns, this.workerStateStale);
    this.workerStateStale = false;
    this.inFlight.start(this.updateThread.update(request, transfer));
    this.updateBuffer = new AgentBuffer();
    this.bookkeeping.policyUpdated();
  }

  /** The worker, on the backend chosen for updates (WebGPU included). */
  private startUpdateThread(): UpdateThread<Request, Reply> {
    return new UpdateThread(this.behaviorName, this.workerKind, updateBackend(), workerSetupFor(this.behaviorName, this.spec, this.settings, this.seed));
  }

  /**
   * Puts the worker's answer into the acting networks once it came; returns whether it did. A
   * failed update (a non-finite loss, a crashed worker) stops the run.
   */
  private applyWorkerUpdate(): boolean {
    const reply = this.inFlight.take();
    if (reply === null) return false;
    if (reply.kind === 'nonFiniteLoss') throw this.behaviorLossError(new NonFiniteLossError(reply.message));
    this.applyWorkerState(reply as Extract<Reply, { kind: 'updated' }>);
    this.reportUpdate(new Map(reply.means));
    return true;
  }

  private reportUpdate(means: PpoUpdateMeans): void {
    for (const [key, value] of means) this.stats.addStat(key, value);
  }
}
