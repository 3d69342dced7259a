#!/usr/bin/env node
/**
 * mlagents-learn: trains every behavior of the connected environments with PPO, as ML-Agents'
 * own mlagents-learn (learn.py), with its flags, its YAML files and its results folder.
 *
 *   npx mlagents-learn config/ppo/3DBall.yaml --run-id=first --env=builtin:3DBall
 *   npx mlagents-learn my-config.yaml --run-id=second            # waits on port 5004: press Play
 *   npx mlagents-learn my-config.yaml --run-id=third --env=Builds/MyGame.x86_64 --num-envs=4
 */
import * as fs from 'fs';
import * as path from 'path';
import { Logger, consoleLogger } from '../common/logger';
import { writeFileWhole } from '../common/whole-files';
import { warnIfOpenToNetwork } from '../communicator/bind-address';
import { RunOptions, checkRunDirectory, checkTrainerTypesBuilt, loadRunOptions, resolveRunPaths, toResolvedYaml } from '../config';
import { DEFAULT_EDITOR_PORT } from '../env/unity-environment';
import { backendForTorchDevice, selectBackend } from '../networks/backend';
import { builtinExecutable, isBuiltinEnv } from '../sims/builtin';
import { startBoard, type Board } from '../board/server';
import { BehaviorProgress, ProgressDisplay } from '../stats/progress-display';
import { TrainerController } from '../trainers/trainer-controller';
import { resolveDemonstrationPaths } from '../trainers/demonstrations';
import { gpuUpdatesRefusal } from '../trainers/gpu-updates';

export interface LearnOptions {
  /** Where relative paths (the config file, results_dir, --env) are taken from. */
  readonly cwd?: string;
  readonly logger?: Logger;
  /** Called once the controller exists, e.g. to stop it; the CLI wires SIGINT and SIGTERM here. */
  readonly onController?: (controller: TrainerController) => void;
  /** The live progress lines of a terminal; `logger` should write through it. */
  readonly progress?: ProgressDisplay;
}

/** How often the progress lines read the trainers' steps. */
const PROGRESS_POLL_MS = 100;

/**
 * One run of mlagents-learn with these arguments (without `node` and the script). Everything that
 * can be checked without an environment is checked before one is launched, and configuration.yaml
 * is written before any environment connects. Resolves with the controller once the run ended.
 */
export async function learn(argv: readonly string[], learnOptions: LearnOptions = {}): Promise<TrainerController> {
  const cwd = learnOptions.cwd ?? process.cwd();
  const logger = learnOptions.logger ?? consoleLogger();
  const options = loadRunOptions(argv, cwd, logger);
  checkTrainerTypesBuilt(options);
  const { inference, resume, initialize_from: initializeFrom } = options.checkpoint_settings;
  if (inference && !resume && initializeFrom === null) {
    logger.warning('--inference without --resume or --initialize-from runs freshly initialized (untrained) policies.');
  }
  warnIfOpenToNetwork(options.extras.bind_address, logger);
  const paths = resolveRunPaths(options, cwd);
  checkRunDirectory(options, cwd);
  // The trainers read the demonstrations from cwd; configuration.yaml keeps the paths as written, as upstream's.
  const trainingOptions = resolveDemonstrationPaths(options, cwd);
  fs.mkdirSync(paths.runLogsDir, { recursive: true });
  writeFileWhole(paths.configurationFile, toResolvedYaml(options));

  const device = backendForTorchDevice(options.torch_settings.device);
  const requested = options.extras.backend !== 'auto' ? options.extras.backend : device.requested;
  await selectBackend(requested, logger, { ...device.options, gpuUpdatesRefusal: gpuUpdatesRefusal(options) });

  const env = options.env_settings;
  const seed = env.seed === -1 ? Math.floor(Math.random() * 10000) : env.seed;
  const executable = executablePath(options, cwd);
  const controller = new TrainerController({
    options: trainingOptions,
    paths,
    seed,
    logger,
    launch: {
      executable,
      numEnvs: env.num_envs,
      // Without an executable the Editor connects on its own port (5004), as upstream.
      basePort: executable === null ? undefined : env.base_port,
      seed,
      noGraphics: options.engine_settings.no_graphics,
      timeoutWait: env.timeout_wait,
      envArgs: env.env_args ?? [],
      numAreas: env.num_areas,
      bindAddress: options.extras.bind_address,
      maxMessageMiB: options.extras.max_message_mib,
      logFolder: paths.runLogsDir,
      engine: options.engine_settings,
    },
  });
  learnOptions.onController?.(controller);
  const board = await boardBeside(options, paths.resultsDir, logger);
  try {
    await train(controller, executable === null, learnOptions.progress);
  } finally {
    await board?.close();
  }
  return controller;
}

/** --board: the board of the results folder on localhost, for as long as the run lasts. */
async function boardBeside(options: RunOptions, resultsDir: string, logger: Logger): Promise<Board | null> {
  const port = options.extras.board_port;
  if (port === null) return null;
  const board = await startBoard({ resultsDir, port, host: 'localhost', logger, portFlag: '--board-port' });
  logger.info(`The training board is at ${board.url}`);
  return board;
}

async function train(controller: TrainerController, waitsForEditor: boolean, progress: ProgressDisplay | undefined): Promise<void> {
  if (progress === undefined) {
    await controller.start();
    return;
  }
  if (waitsForEditor) progress.waitForEditor(DEFAULT_EDITOR_PORT);
  const poll = setInterval(() => progress.update(trainerProgress(controller)), PROGRESS_POLL_MS);
  try {
    await controller.start();
  } finally {
    clearInterval(poll);
    progress.stop();
  }
}

function trainerProgress(controller: TrainerController): Map<string, BehaviorProgress> {
  const progress = new Map<string, BehaviorProgress>();
  for (const [name, trainer] of controller.behaviorTrainers) {
    progress.set(name, { step: trainer.step, maxSteps: trainer.settings.max_steps });
  }
  return progress;
}

/** --env: builtin:NAME is a built-in environment; anything else a path from `cwd`; none, the Editor. */
function executablePath(options: RunOptions, cwd: string): string | null {
  const envPath = options.env_settings.env_path;
  if (envPath === null) return null;
  if (isBuiltinEnv(envPath)) return builtinExecutable(envPath);
  return path.resolve(cwd, envPath);
}

if (require.main === module) {
  // The live lines only when both streams are the terminal: log lines then share it with them.
  const progress = new ProgressDisplay({
    isTTY: process.stdout.isTTY === true && process.stderr.isTTY === true,
    get columns() {
      return process.stdout.columns;
    },
    write: (text) => process.stdout.write(text),
  });
  const logger = progress.logger(consoleLogger());
  let signalled = false;
  learn(process.argv.slice(2), {
    logger,
    progress,
    onController: (controller) => {
      // An error no caller catches (a closed stdout's EPIPE, say; unhandled rejections become such
      // errors) ends the run as a failure that saves and closes, not the process at once. A capture
      // callback, because the wasm backend's own uncaughtException listener rethrows.
      process.setUncaughtExceptionCaptureCallback((error) =>
        controller.fail(new Error(`An error no part of the trainer caught: ${(error as Error).message}`, { cause: error })),
      );
      const stop = (signal: NodeJS.Signals) => {
        if (signalled) {
          // A second signal: the user does not want to wait (for an Editor that never connects, say).
          logger.warning(`${signal} received again: exiting without saving.`);
          process.exit(130);
        }
        signalled = true;
        logger.info(`${signal} received: saving the models and closing the environments.`);
        controller.requestStop();
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    },
  }).then(
    () => process.exit(0),
    (error: Error & { exitCode?: number }) => {
      // commander has printed the usage already for --help (exit code 0) and for bad flags.
      if (error.name === 'CommanderError') process.exit(error.exitCode ?? 2);
      process.stderr.write(`[ERROR] ${error.message}\n`);
      process.exit(1);
    },
  );
}
