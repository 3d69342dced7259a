/**
 * Steps every environment of a run together (upstream's EnvManager and SubprocessEnvManager, in
 * one event loop): after each step it hands each behavior's steps to that behavior's agent
 * manager with the decision taken on the previous step; on the next step it asks the behavior's
 * policy, as the trainers have left it in between, for the next actions of its agents on every
 * environment in one batched forward pass, and steps all environments concurrently.
 *
 * It launches the environments too: --num-envs workers on consecutive ports, each told the engine
 * settings and the environment parameters with its first (RESET) message; when a curriculum
 * lesson changes, the new parameter values go to every worker with its next message. A worker that crashes
 * (its process exits, its connection breaks or it stops answering) is relaunched on its port and
 * every environment is reset, as upstream's SubprocessEnvManager does, until the worker exceeds
 * --max-lifetime-restarts or --restarts-rate-limit-n crashes within --restarts-rate-limit-period-s.
 */
import * as fs from 'fs';
import * as path from 'path';
import type { EngineSettings, EnvironmentSettings, SamplerSettings } from '../config/settings';
import type { Logger } from '../common/logger';
import { CommunicatorError } from '../communicator/rpc-communicator';
import { EngineConfigurationChannel } from '../communicator/side-channels/engine-configuration-channel';
import { EnvironmentParametersChannel } from '../communicator/side-channels/environment-parameters-channel';
import { StatsSideChannel } from '../communicator/side-channels/stats-side-channel';
import { BehaviorSpec, assertSameBehaviorSpec } from '../env/behavior-spec';
import { DecisionSteps } from '../env/steps';
import { UnityEnvironment, UnityEnvironmentError } from '../env/unity-environment';
import { timers } from '../stats/timers';
import { ActingPolicy, ActionInfo, EMPTY_ACTION_INFO } from './action-info';
import { AgentManager } from './agent-processor';

/** What the environment manager needs of each behavior: its agent manager. */
export type BehaviorManagerFactory = (behaviorName: string, spec: BehaviorSpec) => AgentManager<ActingPolicy>;

/** How often a crashed worker may be restarted; -1 lifts a limit. */
export type RestartLimits = Pick<
  EnvironmentSettings,
  'max_lifetime_restarts' | 'restarts_rate_limit_n' | 'restarts_rate_limit_period_s'
>;

export interface LaunchOptions {
  /** The executable to launch; null waits for the Unity Editor (press Play). */
  readonly executable: string | null;
  readonly numEnvs: number;
  readonly basePort: number | undefined;
  readonly seed: number;
  readonly noGraphics: boolean;
  readonly timeoutWait: number;
  readonly envArgs: string[];
  readonly numAreas: number;
  readonly bindAddress: string;
  readonly maxMessageMiB?: number;
  readonly logFolder: string;
  readonly engine: EngineSettings;
  /** The sampler of each environment parameter at launch (its current curriculum lesson's). */
  readonly environmentParameters: Readonly<Record<string, SamplerSettings>> | null;
  readonly restarts: RestartLimits;
  readonly logger: Logger;
  /** Aborted to stop waiting for environments to connect (at launch or after a crash). */
  readonly signal?: AbortSignal;
}

/** One environment and the side channels the trainer talks to it through. */
interface Worker {
  readonly env: UnityEnvironment;
  readonly stats: StatsSideChannel;
  readonly parameters: EnvironmentParametersChannel;
  /** Per behavior, the decision taken on the latest step: the processor pairs it with the next. */
  readonly lastDecision: Map<string, ActionInfo>;
  /** Per behavior, the agents of the latest step that wait for their actions. */
  readonly awaitingDecision: Map<string, DecisionSteps>;
}

/** One worker's step in flight: its exchange with the environment, and how it ended once it has. */
class Exchange {
  /** Null while in flight; then the error it failed with, or null. */
  outcome: { readonly error: Error | null } | null = null;
  /** Resolves (never rejects) when the exchange has ended. */
  readonly finished: Promise<void>;

  constructor(env: UnityEnvironment) {
    this.finished = timers.time('exchange', () => env.step()).then(
      () => {
        this.outcome = { error: null };
      },
      (error: Error) => {
        this.outcome = { error };
      },
    );
  }
}

export class EnvManager {
  private readonly managers = new Map<string, AgentManager<ActingPolicy>>();
  private readonly policies = new Map<string, ActingPolicy>();
  /** Per worker, how many times it was restarted over the whole run. */
  private readonly restartCounts: number[];
  /** Per worker, when it was restarted within the last --restarts-rate-limit-period-s. */
  private readonly recentRestartTimes: number[][];
  /** The environment parameters every worker uses now; a restarted worker is launched with them. */
  private samplers: Readonly<Record<string, SamplerSettings>>;
  /** Per worker, its step in flight; null once its steps were taken in. */
  private readonly exchanges: Array<Exchange | null>;

  private constructor(
    private readonly workers: Worker[],
    private readonly options: LaunchOptions,
    private readonly managerFor: BehaviorManagerFactory,
  ) {
    this.restartCounts = workers.map(() => 0);
    this.recentRestartTimes = workers.map(() => []);
    this.samplers = options.environmentParameters ?? {};
    this.exchanges = workers.map(() => null);
  }

  /** The environment each worker runs now (a restarted worker has a new one). */
  get environments(): readonly UnityEnvironment[] {
    return this.workers.map((w) => w.env);
  }

  /** How many times each worker was restarted after a crash. */
  get restartCountPerWorker(): readonly number[] {
    return this.restartCounts;
  }

  /**
   * Launches the workers concurrently and waits for all their handshakes. If one fails, those
   * already connected are closed and the first error is thrown.
   */
  static async launch(options: LaunchOptions, managerFor: BehaviorManagerFactory): Promise<EnvManager> {
    const attempts = await Promise.allSettled(
      Array.from({ length: options.numEnvs }, (_, workerId) =>
        launchWorker(options, workerId, options.environmentParameters ?? {}),
      ),
    );
    const workers = attempts.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
    const failure = attempts.find((a): a is PromiseRejectedResult => a.status === 'rejected');
    if (failure !== undefined) {
      await Promise.all(workers.map((w) => w.env.close()));
      throw failure.reason;
    }
    return new EnvManager(workers, options, managerFor);
  }

  /**
   * Sends every RESET (with the engine settings and parameters) and takes in the first steps.
   * Steps still in flight end first; what they bring is dropped with the episodes they belong to.
   */
  async reset(): Promise<void> {
    await this.settleExchanges();
    await Promise.all(this.workers.map((w) => w.env.reset()));
    this.takeSteps(this.workers.map((_, workerId) => workerId));
  }

  /**
   * New environment parameter values (a curriculum lesson changed) for every environment, sent
   * with each one's next message: upstream's set_env_parameters.
   */
  setEnvironmentParameters(samplers: Readonly<Record<string, SamplerSettings>>): void {
    this.samplers = samplers;
    for (const worker of this.workers) sendSamplers(worker.parameters, samplers);
  }

  /**
   * New environment parameter values, then every environment reset and every agent's episode
   * ended: upstream's reset(config), for a lesson that requires a reset.
   */
  async resetWithParameters(samplers: Readonly<Record<string, SamplerSettings>>): Promise<void> {
    this.setEnvironmentParameters(samplers);
    this.endAllEpisodes();
    await this.reset();
  }

  /**
   * Steps the environments as upstream's SubprocessEnvManager does: every worker that is not
   * stepping gets its agents' actions, decided now in one batch per behavior, and sends them; as
   * soon as one has answered, the steps of every worker that has answered are taken in. A slow
   * environment holds back only its own agents. If a worker crashed, the others' steps end, the
   * crashed ones are restarted and every environment is reset.
   */
  async step(): Promise<void> {
    this.decideAwaitingActions();
    this.workers.forEach((worker, workerId) => {
      this.exchanges[workerId] ??= new Exchange(worker.env);
    });
    await Promise.race(this.exchanges.map((exchange) => exchange!.finished));
    const answered = this.exchanges.flatMap((exchange, workerId) => (exchange!.outcome !== null ? [workerId] : []));
    if (answered.every((workerId) => this.exchanges[workerId]!.outcome!.error === null)) {
      for (const workerId of answered) this.exchanges[workerId] = null;
      this.takeSteps(answered);
      return;
    }
    const crashes = await this.settleExchanges();
    for (const [workerId, error] of crashes) this.assertCanRestart(workerId, error);
    await this.restartWorkers(crashes);
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.env.close()));
    await this.settleExchanges();
  }

  /** Waits for every step in flight to end; returns the workers whose exchange failed, with the error. */
  private async settleExchanges(): Promise<Map<number, Error>> {
    await Promise.all(this.exchanges.map((exchange) => exchange?.finished));
    const crashes = new Map<number, Error>();
    this.exchanges.forEach((exchange, workerId) => {
      const error = exchange?.outcome?.error;
      if (error) crashes.set(workerId, error);
    });
    this.exchanges.fill(null);
    return crashes;
  }

  /**
   * Throws unless the worker's crash is one a restart can cure (the environment left, broke its
   * connection or stopped answering) and the worker still has restarts left.
   */
  private assertCanRestart(workerId: number, error: Error): void {
    const { env } = this.workers[workerId];
    const stopped = `Environment worker ${workerId} (port ${env.port}) stopped: ${error.message}`;
    if (!(error instanceof CommunicatorError || error instanceof UnityEnvironmentError)) {
      throw new Error(stopped, { cause: error });
    }
    const exceeded = this.exceededRestartLimit(workerId);
    if (exceeded !== null) {
      this.options.logger.error(`Worker ${workerId} exceeded the allowed number of restarts.`);
      throw new Error(`Worker ${workerId} exceeded the allowed number of restarts (${exceeded}). ${stopped}`, {
        cause: error,
      });
    }
  }

  /** The limit another restart of the worker would break, in words; null when it may restart. */
  private exceededRestartLimit(workerId: number): string | null {
    const limits = this.options.restarts;
    const periodStart = Date.now() - limits.restarts_rate_limit_period_s * 1000;
    const recent = this.recentRestartTimes[workerId].filter((time) => time > periodStart);
    this.recentRestartTimes[workerId] = recent;
    const lifetimeLimit = limits.max_lifetime_restarts;
    if (lifetimeLimit !== -1 && this.restartCounts[workerId] >= lifetimeLimit) {
      return `--max-lifetime-restarts ${lifetimeLimit}`;
    }
    const rateLimit = limits.restarts_rate_limit_n;
    if (rateLimit !== -1 && recent.length >= rateLimit) {
      return `--restarts-rate-limit-n ${rateLimit} within --restarts-rate-limit-period-s ${limits.restarts_rate_limit_period_s}`;
    }
    return null;
  }

  /**
   * Relaunches the crashed workers on their ports, then resets every environment and ends every
   * agent's episode: the steps in flight when the workers crashed are no longer to be trusted.
   */
  private async restartWorkers(crashes: ReadonlyMap<number, Error>): Promise<void> {
    await Promise.all(
      [...crashes].map(async ([workerId, error]) => {
        this.recentRestartTimes[workerId].push(Date.now());
        this.restartCounts[workerId] += 1;
        const crashed = this.workers[workerId].env;
        await crashed.close();
        // The relaunched player writes its log afresh: the crashed one's log moves aside first.
        const keptLog = crashed.logFile === undefined ? null : keepCrashedLog(crashed.logFile, this.restartCounts[workerId], this.options.logger);
        const where = keptLog === null ? '' : `. Its log up to the crash is kept in ${keptLog}`;
        this.options.logger.warning(`Restarting worker[${workerId}] after '${error.message}'${where}`);
        this.workers[workerId] = await launchWorker(this.options, workerId, this.samplers);
      }),
    );
    this.endAllEpisodes();
    await this.reset();
  }

  /** Before a reset: the steps in flight and the decisions taken on them no longer count. */
  private endAllEpisodes(): void {
    for (const manager of this.managers.values()) manager.endEpisode();
    for (const worker of this.workers) {
      worker.lastDecision.clear();
      worker.awaitingDecision.clear();
    }
  }

  /**
   * Feeds each behavior's steps from these workers to its agent manager; the agents that ask for
   * a decision wait for it until the next step() (decideAwaitingActions).
   */
  private takeSteps(workerIds: readonly number[]): void {
    for (const workerId of workerIds) {
      const worker = this.workers[workerId];
      const { env } = worker;
      const environmentStats = worker.stats.getAndResetStats();
      for (const [name, spec] of env.behaviorSpecs) {
        const manager = this.managerOf(name, spec);
        const [decisionSteps, terminalSteps] = env.getSteps(name);
        timers.time('process_steps', () =>
          manager.addExperiences(decisionSteps, terminalSteps, workerId, worker.lastDecision.get(name) ?? EMPTY_ACTION_INFO),
        );
        manager.recordEnvironmentStats(environmentStats, workerId);
        worker.lastDecision.set(name, EMPTY_ACTION_INFO);
        if (decisionSteps.length > 0) worker.awaitingDecision.set(name, decisionSteps);
      }
    }
  }

  /**
   * Decides the actions of every agent waiting for one, in one forward pass per behavior, with
   * the policy its trainer has published by now: as upstream's, the trainers advance between a
   * step's arrival and the decision on it, so an update acts from the very next decision.
   */
  private decideAwaitingActions(): void {
    const asking = new Map<string, Array<{ worker: Worker; steps: DecisionSteps }>>();
    for (const worker of this.workers) {
      for (const [name, steps] of worker.awaitingDecision) {
        const parts = asking.get(name) ?? [];
        parts.push({ worker, steps });
        asking.set(name, parts);
      }
      worker.awaitingDecision.clear();
    }
    for (const [name, parts] of asking) {
      const policy = this.currentPolicy(name, this.managers.get(name)!);
      const spec = parts[0].worker.env.behaviorSpecs.get(name)!;
      // A policy keeps no per-worker state (the agents' memories come from their manager), so one batch may mix workers.
      const batch = concatenateDecisions(parts.map((p) => p.steps), spec);
      const manager = this.managers.get(name)!;
      const memories =
        policy.memorySize === 0 ? null : joinArrays(parts.map((p) => manager.memoriesOf(p.steps, p.worker.env.workerId, policy.memorySize)), (n) => new Float32Array(n));
      const decision = timers.time('policy_decide', () => policy.decide(batch, memories));
      let row = 0;
      for (const { worker, steps } of parts) {
        const own = decisionRows(decision, row, steps.length, spec, policy.memorySize);
        worker.env.setActions(name, own.envAction);
        worker.lastDecision.set(name, own);
        row += steps.length;
      }
    }
  }

  /** The behavior's manager; a worker (restarted, or another build) may not bring another specification. */
  private managerOf(name: string, spec: BehaviorSpec): AgentManager<ActingPolicy> {
    let manager = this.managers.get(name);
    if (manager === undefined) {
      manager = this.managerFor(name, spec);
      this.managers.set(name, manager);
    } else if (manager.spec !== spec) {
      assertSameBehaviorSpec(name, manager.spec, spec);
    }
    return manager;
  }

  /** The newest policy its trainer has published (upstream's _update_policy from the policy queue). */
  private currentPolicy(name: string, manager: AgentManager<ActingPolicy>): ActingPolicy {
    const published = manager.policyQueue.drain();
    if (published.length > 0) this.policies.set(name, published[published.length - 1]);
    const policy = this.policies.get(name);
    if (policy === undefined) {
      throw new Error(`The trainer of behavior ${name} published no policy before its agents asked for actions.`);
    }
    return policy;
  }
}

/** Several workers' decision steps of one behavior as one batch, their rows one block after another. */
function concatenateDecisions(parts: readonly DecisionSteps[], spec: BehaviorSpec): DecisionSteps {
  if (parts.length === 1) return parts[0];
  const branches = spec.actionSpec.discreteBranches;
  const anyMask = parts.some((p) => p.actionMask !== null);
  // A worker whose agents sent no mask allows every action: zeros (1 means forbidden).
  const masks = anyMask
    ? branches.map((size, b) => joinArrays(parts.map((p) => p.actionMask?.[b] ?? new Uint8Array(p.length * size)), (n) => new Uint8Array(n)))
    : null;
  return new DecisionSteps(
    spec.observationSpecs.map((_, i) => joinArrays(parts.map((p) => p.obs[i]), (n) => new Float32Array(n))),
    joinArrays(parts.map((p) => p.reward), (n) => new Float32Array(n)),
    joinArrays(parts.map((p) => p.agentId), (n) => new Int32Array(n)),
    masks,
    joinArrays(parts.map((p) => p.groupId), (n) => new Int32Array(n)),
    joinArrays(parts.map((p) => p.groupReward), (n) => new Float32Array(n)),
  );
}

/** The arrays one after another in a new array (the only one itself, uncopied). */
function joinArrays<T extends Float32Array | Int32Array | Uint8Array>(arrays: readonly T[], make: (n: number) => T): T {
  if (arrays.length === 1) return arrays[0];
  const out = make(arrays.reduce((n, a) => n + a.length, 0));
  let offset = 0;
  for (const a of arrays) {
    out.set(a, offset);
    offset += a.length;
  }
  return out;
}

/** Rows [start, start + count) of a batched decision: one worker's share. */
function decisionRows(decision: ActionInfo, start: number, count: number, spec: BehaviorSpec, memorySize: number): ActionInfo {
  if (start === 0 && count === decision.agentIds.length) return decision;
  const c = spec.actionSpec.continuousSize;
  const d = spec.actionSpec.discreteSize;
  const rows = <T extends Float32Array | Int32Array>(a: T, width: number): T => a.subarray(start * width, (start + count) * width) as T;
  return {
    action: { continuous: rows(decision.action.continuous, c), discrete: rows(decision.action.discrete, d) },
    envAction: { continuous: rows(decision.envAction.continuous, c), discrete: rows(decision.envAction.discrete, d) },
    logProbs: { continuous: rows(decision.logProbs.continuous, c), discrete: rows(decision.logProbs.discrete, d) },
    entropy: decision.entropy === undefined ? undefined : rows(decision.entropy, 1),
    agentIds: rows(decision.agentIds, 1),
    ...(decision.memories === undefined ? {} : { memories: rows(decision.memories, memorySize) }),
  };
}

async function launchWorker(
  options: LaunchOptions,
  workerId: number,
  samplers: Readonly<Record<string, SamplerSettings>>,
): Promise<Worker> {
  const engineChannel = new EngineConfigurationChannel();
  const { engine } = options;
  engineChannel.setConfigurationParameters({
    width: engine.width,
    height: engine.height,
    qualityLevel: engine.quality_level,
    timeScale: engine.time_scale,
    targetFrameRate: engine.target_frame_rate,
    captureFrameRate: engine.capture_frame_rate,
  });
  const parametersChannel = new EnvironmentParametersChannel();
  sendSamplers(parametersChannel, samplers);
  const stats = new StatsSideChannel();
  const env = await UnityEnvironment.create({
    fileName: options.executable,
    workerId,
    basePort: options.basePort,
    seed: options.seed,
    // As upstream: with no_graphics_monitor, every worker but the first runs without graphics.
    noGraphics: options.noGraphics || (options.engine.no_graphics_monitor && workerId !== 0),
    timeoutWait: options.timeoutWait,
    additionalArgs: options.envArgs,
    sideChannels: [engineChannel, parametersChannel, stats],
    logFolder: options.logFolder,
    numAreas: options.numAreas,
    bindAddress: options.bindAddress,
    signal: options.signal,
    maxMessageMiB: options.maxMessageMiB,
    logger: options.logger,
  });
  return { env, stats, parameters: parametersChannel, lastDecision: new Map(), awaitingDecision: new Map() };
}

/** Renames a crashed player's log, Player-<n>.log to Player-<n>.crash-<restart>.log; its new path, or null when there is none. */
function keepCrashedLog(log: string, restart: number, logger: Logger): string | null {
  const extension = path.extname(log);
  const kept = `${log.slice(0, log.length - extension.length)}.crash-${restart}${extension}`;
  try {
    fs.renameSync(log, kept);
    return kept;
  } catch (error) {
    // The player wrote no log: nothing to keep.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    logger.warning(`Could not keep the crashed player's log ${log} as ${kept} (${(error as Error).message}): its restart overwrites it.`);
    return null;
  }
}

function sendSamplers(channel: EnvironmentParametersChannel, samplers: Readonly<Record<string, SamplerSettings>>): void {
  for (const [key, sampler] of Object.entries(samplers)) sendSampler(channel, key, sampler);
}

/** Sends one environment parameter's sampler as upstream's EnvironmentParameterManager does. */
function sendSampler(channel: EnvironmentParametersChannel, key: string, sampler: SamplerSettings): void {
  switch (sampler.sampler_type) {
    case 'constant':
      channel.setFloatParameter(key, sampler.sampler_parameters.value);
      break;
    case 'uniform': {
      const p = sampler.sampler_parameters;
      channel.setUniformSamplerParameters(key, p.min_value, p.max_value, p.seed);
      break;
    }
    case 'gaussian': {
      const p = sampler.sampler_parameters;
      channel.setGaussianSamplerParameters(key, p.mean, p.st_dev, p.seed);
      break;
    }
    case 'multirangeuniform': {
      const p = sampler.sampler_parameters;
      channel.setMultirangeUniformSamplerParameters(key, p.intervals, p.seed);
      break;
    }
  }
}
