/**
 * The lifetime of a training run (upstream's TrainerController with the parts of learn.py that
 * run it): a trainer per behavior, created when the behavior's agents first appear; the loop that
 * steps the environments and advances the trainers until every behavior reaches max_steps or a
 * stop is asked for; and the end: final checkpoints, training_status.json, timers.json, and the
 * environments closed, whatever ended the run.
 *
 * A trainer serves a behavior name as upstream's does: the name before `?team=N`. Without
 * self_play every team of a name feeds the one trainer and acts with its policy; with self_play
 * a GhostTrainer (ghost/) between them lets one team learn while the others play snapshots, and
 * the environments are reset whenever the learning team changes.
 */
import * as fs from 'fs';
import * as path from 'path';
import type { Logger } from '../common/logger';
import { RunOptions, RunPaths, TrainerSettings, behaviorDir, settingsForBehavior } from '../config';
import { BehaviorSpec, describeBehaviorSpec } from '../env/behavior-spec';
import { InterruptedError } from '../env/unity-environment';
import {
  ConsoleWriter,
  EnvironmentStatusFile,
  STAT_KEYS,
  StatsRegistry,
  StatusType,
  TENSORBOARD_HIDDEN_KEYS,
  TensorboardWriter,
  TrainingStatus,
  timers,
  writeTimingTree,
} from '../stats';
import { ActingPolicy } from './action-info';
import { AgentManager } from './agent-processor';
import { parseBehaviorId } from './behavior-identifiers';
import { CheckpointRequest, loadLatestCheckpoint, saveCheckpoint, saveFinalCheckpoint } from './checkpoints';
import { EnvManager, LaunchOptions } from './env-manager';
import { CurriculumProgress, EnvironmentParameterManager } from './environment-parameter-manager';
import { GhostController } from './ghost/controller';
import { GhostTrainer } from './ghost/trainer';
import { HeapExhaustedError, HeapGuard } from './heap-guard';
import type { Trainer } from './trainer';
import { createTrainer } from './trainer-factory';

export interface TrainerControllerOptions {
  readonly options: RunOptions;
  readonly paths: RunPaths;
  readonly launch: Omit<LaunchOptions, 'logger' | 'restarts' | 'environmentParameters'>;
  readonly seed: number;
  readonly logger: Logger;
}

/** The trainer of one behavior name and the agents of each of its teams. */
interface BehaviorTrainer {
  /** The learning trainer: its step, episodes and model are the behavior's. */
  readonly trainer: Trainer;
  /** With self_play: the trainer between the teams and the learning trainer. */
  readonly ghost: GhostTrainer | null;
  /** Each team's agents, by the behavior name the environment sent. */
  readonly managers: Map<string, AgentManager<ActingPolicy>>;
  readonly folder: string;
  readonly spec: BehaviorSpec;
}

export class TrainerController {
  /** By behavior name without its team (upstream's brain name). */
  private readonly trainers = new Map<string, BehaviorTrainer>();
  private readonly ghostController: GhostController;
  private readonly stats = new StatsRegistry();
  private readonly status: TrainingStatus;
  private readonly parameters: EnvironmentParameterManager;
  private readonly logger: Logger;
  private stopRequested = false;
  /** Aborted by requestStop() and fail(): ends any wait for an environment to connect. */
  private readonly interruption = new AbortController();
  /** An error met outside the run's own calls (uncaught elsewhere in the process): it ends the run. */
  private fatalError: { error: unknown } | null = null;
  private readonly heapGuard = new HeapGuard();
  /** run_logs/environments.json, for a board watching the run. */
  private readonly environmentStatus: EnvironmentStatusFile;

  constructor(private readonly run: TrainerControllerOptions) {
    this.logger = run.logger;
    this.ghostController = new GhostController(run.logger);
    this.environmentStatus = new EnvironmentStatusFile(run.paths.runLogsDir);
    const resume = run.options.checkpoint_settings.resume;
    this.status = resume ? TrainingStatus.load(run.paths.trainingStatusFile, run.logger) : new TrainingStatus();
    this.parameters = new EnvironmentParameterManager(
      run.options.environment_parameters,
      run.seed,
      resume,
      this.status,
      run.logger,
    );
    this.stats.addWriter(new ConsoleWriter(run.logger));
    this.stats.addWriter(
      new TensorboardWriter(run.paths.runDir, {
        logger: run.logger,
        clearPastData: !resume,
        hiddenKeys: TENSORBOARD_HIDDEN_KEYS,
      }),
    );
  }

  /** The trainer of each behavior seen so far, by its name without team. */
  get behaviorTrainers(): ReadonlyMap<string, Trainer> {
    return new Map([...this.trainers].map(([name, { trainer }]) => [name, trainer]));
  }

  /** The self-play trainer of each behavior trained with self_play, by its name without team. */
  get ghostTrainers(): ReadonlyMap<string, GhostTrainer> {
    return new Map([...this.trainers].flatMap(([name, { ghost }]) => (ghost === null ? [] : [[name, ghost] as const])));
  }

  /**
   * Ends the run after the current step, saving checkpoints (what SIGINT and SIGTERM ask for); a
   * wait for an environment to connect (at launch, or to a restarted one) ends at once.
   */
  requestStop(): void {
    this.stopRequested = true;
    this.interruption.abort();
  }

  /**
   * Ends the run after the current step because of an error met elsewhere in the process (the CLI
   * passes uncaught ones): the models are saved and the environments closed as on a stop, then
   * start() rejects with this error.
   */
  fail(error: unknown): void {
    this.fatalError ??= { error };
    this.stopRequested = true;
    this.interruption.abort();
  }

  /**
   * Trains until every behavior reached max_steps or a stop was requested. Whatever ended the run,
   * the models are saved (those whose weights are finite) and the environments closed.
   */
  async start(): Promise<void> {
    fs.mkdirSync(this.run.paths.runLogsDir, { recursive: true });
    let envManager: EnvManager | null = null;
    let failure: { error: unknown } | null = null;
    try {
      this.environmentStatus.record('connecting', new Array<number>(this.run.launch.numEnvs).fill(0));
      envManager = await EnvManager.launch(
        {
          ...this.run.launch,
          environmentParameters: this.parameters.currentSamplers(),
          restarts: this.run.options.env_settings,
          logger: this.logger,
          signal: this.interruption.signal,
        },
        (name, spec) => this.addBehavior(name, spec),
      );
      await this.train(envManager);
    } catch (error) {
      if (error instanceof InterruptedError && this.stopRequested && this.fatalError === null) {
        this.logger.info(`Stopped by a signal while waiting for an environment to connect: ${this.trainers.size > 0 ? 'saving the models.' : 'nothing to save.'}`);
      } else {
        failure = { error };
      }
    }
    failure ??= this.fatalError;
    const endingErrors = await this.endRun(envManager);
    if (failure === null && endingErrors.length > 0) failure = { error: endingErrors.shift() };
    for (const error of endingErrors) this.logger.error(`While ending the run: ${(error as Error).message}`);
    if (failure !== null) throw failure.error;
  }

  private async train(envManager: EnvManager): Promise<void> {
    await timers.time('env_reset', () => envManager.reset());
    this.environmentStatus.record('training', envManager.restartCountPerWorker);
    this.parameters.logCurrentLessons();
    // An inference run goes on until it is stopped, as upstream's.
    const inference = this.run.options.checkpoint_settings.inference;
    while (!this.stopRequested && (inference || this.shouldStillTrain())) {
      await timers.time('env_step', () => envManager.step());
      this.environmentStatus.record('training', envManager.restartCountPerWorker);
      this.reportLessons();
      timers.time('trainer_advance', () => this.advanceTrainers());
      for (const { trainer } of this.trainers.values()) await trainer.waitUntilReady?.();
      await this.advanceLessons(envManager);
      this.guardHeap();
    }
    // A trainer updating in a worker (threaded: true) may have an update in flight: the final models include it.
    for (const { trainer } of this.trainers.values()) await trainer.finishUpdate?.();
    if (this.fatalError !== null) {
      this.logger.error(`Saving the models and closing the environments after this error: ${(this.fatalError.error as Error).message}`);
    } else if (this.stopRequested) {
      this.logger.info(inference ? 'Inference stopped.' : 'Training stopped by a signal: saving the models.');
    }
  }

  /**
   * The end of every run: the final models, the trainers' workers, the summaries, timers.json and
   * the environments, each attempted whatever happened to the ones before. Returns their errors.
   */
  private async endRun(envManager: EnvManager | null): Promise<unknown[]> {
    const errors: unknown[] = [];
    const attempt = async (step: () => unknown): Promise<void> => {
      try {
        await step();
      } catch (error) {
        errors.push(error);
      }
    };
    if (!this.run.options.checkpoint_settings.inference) {
      for (const name of this.trainers.keys()) await attempt(() => this.saveFinalModel(name));
      await attempt(() => this.status.save(this.run.paths.trainingStatusFile));
    }
    for (const { trainer } of this.trainers.values()) await attempt(() => trainer.close?.());
    await attempt(() => this.stats.close());
    await attempt(() => writeTimingTree(this.run.paths.runLogsDir, timers));
    await attempt(() => envManager?.close());
    await attempt(() => this.environmentStatus.record('ended', envManager?.restartCountPerWorker ?? []));
    return errors;
  }

  /**
   * Ends the run as a failure while the models can still be saved, when the heap is about to run
   * out: V8 would abort the process, saving nothing.
   */
  private guardHeap(): void {
    const reading = this.heapGuard.check();
    if (reading !== null) this.fail(new HeapExhaustedError(reading, this.describeStop()));
  }

  /** What ending the run now keeps, and where. */
  private describeStop(): string {
    const names = [...this.trainers.keys()];
    if (names.length === 0) return 'The run stops here; no behavior has appeared yet, so there is no model to save.';
    if (this.run.options.checkpoint_settings.inference) return 'The run stops here (an inference run saves no model).';
    const files = names.map((name) => `${name}.onnx, and a checkpoint in ${name}${path.sep}`).join('; ');
    return `The run stops here and saves its models in ${this.run.paths.runDir} (${files}).`;
  }

  /** No behavior seen yet, or one still below its max_steps. */
  private shouldStillTrain(): boolean {
    if (this.trainers.size === 0) return true;
    return [...this.trainers.values()].some(({ trainer }) => trainer.shouldStillTrain);
  }

  /** Every behavior reports each parameter's lesson, as upstream's controller does every step. */
  private reportLessons(): void {
    for (const [parameter, lesson] of this.parameters.currentLessonNumbers()) {
      for (const name of this.trainers.keys()) this.stats.reporter(name).setStat(STAT_KEYS.lessonNumber(parameter), lesson);
    }
  }

  /**
   * Upstream's reset_env_if_ready: lessons whose completion criteria are met move on, the reward
   * buffers are emptied, and the environments get the new values, reset first when a finished
   * lesson asks for it or the learning team of self-play changed.
   */
  private async advanceLessons(envManager: EnvManager): Promise<void> {
    const progress = new Map<string, CurriculumProgress>();
    for (const [name, { trainer }] of this.trainers) {
      progress.set(name, { step: trainer.step, maxSteps: trainer.settings.max_steps, episodeRewards: trainer.episodeRewards });
    }
    const { updated, mustReset } = this.parameters.updateLessons(progress);
    if (updated) for (const { trainer } of this.trainers.values()) trainer.clearEpisodeRewards();
    // A new learning team starts from fresh episodes, as upstream's.
    const teamChanged = this.ghostController.shouldReset();
    const samplers = this.parameters.currentSamplers();
    if (mustReset || teamChanged) await timers.time('env_reset', () => envManager.resetWithParameters(samplers));
    else if (updated) envManager.setEnvironmentParameters(samplers);
  }

  private advanceTrainers(): void {
    for (const { trainer, ghost, managers } of this.trainers.values()) {
      if (ghost !== null) ghost.advance();
      else for (const manager of managers.values()) trainer.advance(manager.trajectoryQueue, manager.policyQueue);
    }
  }

  /**
   * A behavior's agents appeared: the trainer of its name (made with the name's first team), and
   * the team's agent manager, which acts with the policy the trainer gives it.
   */
  private addBehavior(behaviorId: string, spec: BehaviorSpec): AgentManager<ActingPolicy> {
    const id = parseBehaviorId(behaviorId);
    const entry = this.trainers.get(id.brainName) ?? this.createTrainer(id.brainName, spec);
    if (describeBehaviorSpec(entry.spec) !== describeBehaviorSpec(spec)) {
      const first = [...entry.managers.keys()][0];
      throw new Error(
        `The behaviors ${first} and ${behaviorId} share the trainer ${id.brainName} but not their observations and actions ` +
          `(${describeBehaviorSpec(entry.spec)}; ${describeBehaviorSpec(spec)}): teams of one behavior name need the same ` +
          'Behavior Parameters; otherwise give each its own Behavior Name.',
      );
    }
    const manager = new AgentManager<ActingPolicy>(spec, {
      behaviorId,
      stats: this.stats.reporter(id.brainName),
      maxTrajectoryLength: entry.trainer.settings.time_horizon,
      threaded: false,
      logger: this.logger,
    });
    if (entry.ghost !== null) entry.ghost.addTeam(id, manager);
    else manager.policyQueue.put(entry.trainer.policy);
    entry.managers.set(behaviorId, manager);
    return manager;
  }

  /** The trainer of a behavior name: its settings, the learning trainer, its self-play and its restored state. */
  private createTrainer(name: string, spec: BehaviorSpec): BehaviorTrainer {
    const { options, paths } = this.run;
    const settings = settingsForBehavior(options, name, this.logger);
    const folder = behaviorDir(paths, name);
    const reporter = this.stats.reporter(name);
    const trainer = createTrainer({
      behaviorName: name,
      spec,
      settings,
      stats: reporter,
      seed: this.run.seed,
      trainModel: !options.checkpoint_settings.inference,
      onCheckpoint: (step) => this.checkpoint(name, step),
      logger: this.logger,
    });
    const ghost =
      settings.self_play === null
        ? null
        : new GhostTrainer({
            brainName: name,
            learner: trainer,
            selfPlay: settings.self_play,
            controller: this.ghostController,
            stats: reporter,
            seed: this.run.seed,
            logger: this.logger,
          });
    fs.mkdirSync(folder, { recursive: true });
    const { resume } = options.checkpoint_settings;
    if (resume) {
      trainer.step = loadLatestCheckpoint(folder, ghost ?? trainer, { resume: true });
      this.logger.info(`Resuming training of ${name} from step ${trainer.step}.`);
    } else if (paths.initializeFromDir !== null) {
      loadLatestCheckpoint(path.join(paths.initializeFromDir, name), trainer);
      this.logger.info(`Initialized ${name} from the run in ${paths.initializeFromDir}.`);
    }
    const entry: BehaviorTrainer = { trainer, ghost, managers: new Map(), folder, spec };
    this.trainers.set(name, entry);
    return entry;
  }

  private checkpoint(name: string, step: number): void {
    this.recordElo(name);
    const record = saveCheckpoint(this.checkpointRequest(name, step), this.status);
    this.status.save(this.run.paths.trainingStatusFile);
    // Upstream writes timers.json only at the end; written here too, a board shows where a live run's time goes.
    writeTimingTree(this.run.paths.runLogsDir, timers);
    this.logger.info(`Saved the model of ${name} at step ${step}: ${record.file_path}`);
  }

  /** Upstream's _save_models for one behavior: a checkpoint at its current step, and its final model. */
  private saveFinalModel(name: string): void {
    const { trainer } = this.trainers.get(name)!;
    this.recordElo(name);
    const final = saveFinalCheckpoint(this.checkpointRequest(name, trainer.step), this.status, this.run.paths.runDir);
    this.logger.info(`Saved the final model of ${name} at step ${trainer.step}: ${final.file_path}`);
  }

  /** Self-play: the learning policy's ELO in training_status.json, as upstream's. */
  private recordElo(name: string): void {
    const { ghost } = this.trainers.get(name)!;
    if (ghost !== null) this.status.setParameterState(name, StatusType.ELO, ghost.currentElo);
  }

  private checkpointRequest(name: string, step: number): CheckpointRequest {
    const { trainer, ghost, folder, spec } = this.trainers.get(name)!;
    return {
      behaviorName: name,
      spec,
      folder,
      trainer: ghost ?? trainer,
      step,
      reward: trainer.meanRewardSinceUpdate,
      keepCheckpoints: trainer.settings.keep_checkpoints,
    };
  }
}
