#!/usr/bin/env node
/**
 * mlagents-drive: connects to one environment over Unity ML-Agents' protocol, drives every
 * behavior with uniform random actions for a number of steps, and prints what it saw. It shows
 * the communicator at work, and checks a Unity build or Editor before training with it.
 *
 *   npx mlagents-drive --env=builtin:Scripted --steps 200
 *   npx mlagents-drive                                  # waits on port 5004: press Play in Unity
 *   npx mlagents-drive --env=Builds/MyGame.x86_64 --no-graphics
 */
import { Command, InvalidArgumentError } from 'commander';
import * as path from 'path';
import { consoleLogger } from '../common/logger';
import { warnIfOpenToNetwork } from '../communicator/bind-address';
import { DEFAULT_MAX_MESSAGE_MIB, MAX_MESSAGE_SIZE_FLAG } from '../communicator/rpc-communicator';
import { InterruptedError, UnityEnvironment } from '../env/unity-environment';
import { builtinExecutable, isBuiltinEnv } from '../sims/builtin';

interface DriveOptions {
  env?: string;
  steps: number;
  basePort?: number;
  seed: number;
  noGraphics: boolean;
  timeoutWait: number;
  envArgs: string[];
  bindAddress: string;
  logFolder?: string;
  maxMessageMiB: number;
}

/** What one behavior did during the drive. */
interface BehaviorTally {
  decisions: number;
  episodes: number;
  episodeRewards: number[];
  running: Map<number, number>;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(`expected a positive integer, got "${value}"`);
  return n;
}

function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`expected an integer >= 0, got "${value}"`);
  return n;
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (!(n > 0)) throw new InvalidArgumentError(`expected a positive number of seconds, got "${value}"`);
  return n;
}

export function parseDriveArgs(argv: string[]): DriveOptions {
  const program = new Command('mlagents-drive')
    .description('Drive an ML-Agents environment with random actions and report what it sends.')
    .option('--env <path>', 'a Unity build, or builtin:NAME; without it, wait for the Unity Editor')
    .option('--steps <n>', 'steps to take', positiveInt, 100)
    .option('--base-port <port>', 'port of the trainer (5005 with --env, 5004 without)', nonNegativeInt)
    .option('--seed <n>', 'seed sent to the environment', nonNegativeInt, 0)
    .option('--no-graphics', 'run the build with -nographics -batchmode')
    .option('--timeout-wait <seconds>', 'how long to wait for the environment to answer', positiveNumber, 60)
    .option('--env-args <args...>', 'extra arguments for the build', [])
    .option('--bind-address <host>', 'address to listen on (localhost: this machine only)', 'localhost')
    .option('--log-folder <dir>', 'folder for the build\'s Player-0.log')
    .option(`${MAX_MESSAGE_SIZE_FLAG} <MiB>`, 'largest message accepted from the environment', positiveNumber, DEFAULT_MAX_MESSAGE_MIB)
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  program.parse(argv, { from: 'user' });
  const o = program.opts();
  return {
    env: o.env,
    steps: o.steps,
    basePort: o.basePort,
    seed: o.seed,
    noGraphics: o.graphics === false,
    timeoutWait: o.timeoutWait,
    envArgs: o.envArgs,
    bindAddress: o.bindAddress,
    logFolder: o.logFolder,
    maxMessageMiB: o.maxMessageSize,
  };
}

export async function drive(options: DriveOptions): Promise<Map<string, BehaviorTally>> {
  const logger = consoleLogger();
  warnIfOpenToNetwork(options.bindAddress, logger);
  const fileName = options.env === undefined ? null : isBuiltinEnv(options.env) ? builtinExecutable(options.env) : options.env;
  // Ctrl-C while the environment connects ends the wait at once (and the build it launched).
  const connecting = new AbortController();
  const interruptConnecting = () => connecting.abort();
  process.once('SIGINT', interruptConnecting);
  process.once('SIGTERM', interruptConnecting);
  const env = await UnityEnvironment.create({
    signal: connecting.signal,
    fileName,
    basePort: options.basePort,
    seed: options.seed,
    noGraphics: options.noGraphics,
    timeoutWait: options.timeoutWait,
    additionalArgs: options.envArgs,
    bindAddress: options.bindAddress,
    maxMessageMiB: options.maxMessageMiB,
    logFolder: options.logFolder && path.resolve(options.logFolder),
    logger,
  }).finally(() => {
    process.off('SIGINT', interruptConnecting);
    process.off('SIGTERM', interruptConnecting);
  });
  const stop = () => {
    logger.info('Interrupted: closing the environment.');
    void env.close().then(() => process.exit(130));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const tallies = new Map<string, BehaviorTally>();
  const started = process.hrtime.bigint();
  try {
    await env.reset();
    for (let step = 0; step < options.steps; step++) {
      for (const [name, spec] of env.behaviorSpecs) {
        const [decision, terminal] = env.getSteps(name);
        const tally: BehaviorTally = tallies.get(name) ?? { decisions: 0, episodes: 0, episodeRewards: [], running: new Map() };
        tallies.set(name, tally);
        for (let i = 0; i < terminal.length; i++) {
          const id = terminal.agentId[i];
          tally.episodeRewards.push((tally.running.get(id) ?? 0) + terminal.reward[i]);
          tally.running.delete(id);
          tally.episodes += 1;
        }
        for (let i = 0; i < decision.length; i++) {
          const id = decision.agentId[i];
          tally.running.set(id, (tally.running.get(id) ?? 0) + decision.reward[i]);
        }
        tally.decisions += decision.length;
        env.setActions(name, spec.actionSpec.randomAction(decision.length));
      }
      await env.step();
    }
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await env.close();
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  report(env, tallies, options.steps, seconds);
  return tallies;
}

function report(env: UnityEnvironment, tallies: Map<string, BehaviorTally>, steps: number, seconds: number): void {
  const lines = [`Drove ${env.name || 'the environment'} for ${steps} steps in ${seconds.toFixed(2)} s (${(steps / seconds).toFixed(0)} steps/s).`];
  for (const [name, spec] of env.behaviorSpecs) {
    const t = tallies.get(name);
    const obs = spec.observationSpecs.map((o) => `[${o.shape.join('x')}]${o.name ? ` ${o.name}` : ''}`).join(', ');
    const mean = t && t.episodeRewards.length > 0 ? t.episodeRewards.reduce((a, b) => a + b, 0) / t.episodeRewards.length : NaN;
    lines.push(
      `  ${name}: observations ${obs}; ${spec.actionSpec}; ${t?.decisions ?? 0} decisions, ` +
        `${t?.episodes ?? 0} episodes ended, mean episode reward ${Number.isNaN(mean) ? 'n/a' : mean.toFixed(3)}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

if (require.main === module) {
  let options: DriveOptions;
  try {
    options = parseDriveArgs(process.argv.slice(2));
  } catch (error) {
    const code = (error as { exitCode?: number }).exitCode;
    process.exit(code ?? 2);
  }
  drive(options).then(
    () => process.exit(0),
    (error: Error) => {
      process.stderr.write(`[ERROR] ${error.message}\n`);
      process.exit(error instanceof InterruptedError ? 130 : 1);
    },
  );
}
