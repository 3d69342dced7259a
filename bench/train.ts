/**
 * npm run bench:train: how fast `mlagents-learn` trains, end to end, through the built CLI.
 *   (a) steps per second (agent steps, as the run counts them) on the built-in 3DBall (config/ppo/3DBall.yaml as it is,
 *       its time scale included), with --num-envs 1 and 4, threaded false and true, each run stopped after a fixed wall time;
 *   (b) seconds per PPO update (buffer 12000, batch 64, 3 epochs) per backend, from bench/ppo-update.ts;
 *   (c) wall time to train upstream's SimpleGoal test cases (1D continuous, 1D discrete, 2D) with
 *       their configs and budgets, beside Python ML-Agents' times on this machine;
 *   (d) built-in Basic with config/ppo/Basic.yaml for 40000 steps: when its mean reward reaches 0.8;
 *   (e) with --visual, instead of the rest: built-in GridWorld and Visual3DBall with their config/ppo
 *       files and budgets, each stopped once its summary mean reward reaches the threshold;
 *   (f) with --hallway, instead of the rest: built-in Hallway with config/ppo/Hallway.yaml (memory) and the
 *       same config without its memory section, each up to --hallway-steps steps or until the mean of the
 *       summaries in a window of HALLWAY_WINDOW_STEPS steps reaches upstream's Hallway benchmark, 0.7: the first
 *       summary and window there, the best and last windows, and every window's mean; --hallway-from tables
 *       runs already made (their behavior folders' event files) the same way, e.g. one resumed by hand;
 *   (g) with --pyramids, instead of the rest: built-in Pyramids in a smaller world (PYRAMIDS_WORLD) with
 *       config/ppo/Pyramids.yaml (curiosity), config/ppo/PyramidsRND.yaml (rnd) and Pyramids.yaml without
 *       its curiosity section (ppo: the extrinsic reward alone), each for --pyramids-steps steps, same seed:
 *       every summary's mean reward, the first to reach PYRAMIDS_SOLVED, and the last;
 *   (h) with --imitation, instead of the rest: built-in Basic with config/imitation/Basic.yaml (GAIL and
 *       behavioral cloning from a demonstration its heuristic records first, 1000 records) and with
 *       config/ppo/Basic.yaml, each for BASIC_STEPS steps, same seed: the first summary at the
 *       heuristic's level (HEURISTIC_BASIC), the last, and every summary's mean reward;
 *   (i) with --sorter, instead of the rest: built-in Sorter with upstream's config/ppo/Sorter_curriculum.yaml
 *       (its curriculum on num_tiles), --sorter-areas areas, stopped after --sorter-minutes of wall time
 *       (upstream trains 5 million steps): every summary's step, mean reward and num_tiles lesson;
 *   (j) with --coop, instead of the rest: built-in DungeonEscape with config/poca/DungeonEscape.yaml (MA-POCA)
 *       and config/ppo/DungeonEscape.yaml (independent PPO: the same network, hyperparameters and budget),
 *       same seed: every summary's DungeonEscape/Group Reward and DungeonEscape/Escaped (recorded by the
 *       environment once per group episode, so the same figures under either trainer), POCA's
 *       Environment/Group Cumulative Reward beside them, and the last summary's;
 *   (k) with --selfplay, instead of the rest: built-in Tennis with config/ppo/Tennis.yaml (self-play), a checkpoint every
 *       TENNIS_CHECKPOINT_STEPS steps, all kept, same seed: Self-play/ELO at every summary, then bench/duel-eval.ts's
 *       games (DUEL_GAMES, seeded): the final checkpoint against the untrained policy (same seed, max_steps 1), the
 *       first checkpoint, the random player and the heuristic;
 *   (l) with --visual3dball, instead of the rest: built-in Visual3DBall with config/ppo/Visual3DBall.yaml to its
 *       max_steps (or --visual3dball-steps), never stopped early: every summary's mean reward, the last, the wall time;
 *   then SAC's tables (bench/sac.ts): updates per second at batch 128, wall time of its test cases.
 * Nothing is asserted: the numbers are printed as measured.
 * Options: --seconds 40 (per 3DBall run)  --num-envs 1,4  --threaded false,true  --backends wasm,cpu
 *          --sac-3dball (also time SAC on 3DBall to a mean reward of 80)
 *          --visual (only (e): GridWorld and Visual3DBall with config/ppo's files, up to their max_steps: long)
 *          --hallway memory,no-memory (only (f), the runs named; long)  --hallway-steps 2000000  --hallway-seed 1
 *          --hallway-from results/<run-id>/Hallway,... (only (f), no training)
 *          --pyramids curiosity,rnd,ppo (only (g), the runs named; long)  --pyramids-steps 250000
 *          --imitation (only (h))
 *          --sorter (only (i); long)  --sorter-minutes 40  --sorter-areas 8
 *          --coop poca,ppo (only (j), the runs named; long)  --coop-steps N (both runs' max_steps; the configs' 400000 by default)
 *          --selfplay (only (k); long)  --selfplay-steps N (max_steps; the config's 2000000 by default)
 *          --visual3dball (only (l); long)  --visual3dball-steps N (max_steps; the config's 400000 by default)
 */
import { execFileSync, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { parseArgs } from 'util';
import * as YAML from 'yaml';
import { builtinExecutable } from '../src/sims/builtin';
import { ESCAPED_STAT, GROUP_REWARD_STAT } from '../src/sims/envs/dungeon-escape';
import { listEventFiles, readEventFile } from '../src/stats/event-file';
import { STAT_KEYS } from '../src/stats/stats-reporter';
import { freePort, tempDir } from '../test/helpers/paths';
import { simpleGoalArgs, writeSimplePpoConfig } from '../test/cli/learn-helpers';
import { DUEL_COLUMNS, duel, duelRow } from './duel-eval';
import { sacBenchmarks } from './sac';
import { printTable } from './table';

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'dist', 'cli', 'mlagents-learn.js');
const THREE_D_BALL_CONFIG = path.join(ROOT, 'config', 'ppo', '3DBall.yaml');
const BASIC_CONFIG = path.join(ROOT, 'config', 'ppo', 'Basic.yaml');
/** The acceptance budget for Basic: a mean reward of 0.8 within 40000 steps. */
const BASIC_STEPS = 40000;

/**
 * (g) The world Pyramids is trained in here (src/sims/envs/pyramids.ts): upstream's room at 0.6 of its
 * size (59.4 by 59.4) and episodes of 800 steps instead of 5000, so that a budget of a few hundred
 * thousand steps (upstream trains 10 million) can tell exploration with a bonus from exploration
 * without. At half the size and 1000 steps, random actions reach the brick often enough (2 episodes
 * of 320) for plain PPO to learn it within 300000 steps; here they reached it in none of 800.
 */
const PYRAMIDS_WORLD = ['--area-scale', '0.6', '--max-step', '800'];
/** (f) Upstream's benchmark mean reward for Hallway. */
const HALLWAY_BENCHMARK = 0.7;
/**
 * (f) Hallway's summaries are averaged over windows of this many steps before comparing with the
 * benchmark: a summary holds 20 to 30 episodes of +1 or -0.1, so one summary passes 0.7 by luck
 * where a window of ten hardly does.
 */
const HALLWAY_WINDOW_STEPS = 100000;
/** (h) Basic's heuristic walks straight to the large goal: 1 less 7 steps' cost; a summary within 0.01 of it is at its level. */
const HEURISTIC_BASIC = 0.92;
/** (h) Records of the heuristic's demonstration. */
const BASIC_DEMO_RECORDS = 1000;

/** (k) Checkpoints of the self-play run: the first is the early policy the final one plays against. */
const TENNIS_CHECKPOINT_STEPS = 100000;
/** (k) Games (points) of each evaluation. */
const DUEL_GAMES = 400;

/** A summary mean above this needs most episodes to end at the gold brick (+2 less the steps' cost; -1 when not reached). */
const PYRAMIDS_SOLVED = 1;

/** One console summary line: `<behavior>. Step: N. Time Elapsed: T s. Mean Reward: R. ...` */
interface Summary {
  step: number;
  elapsedSeconds: number;
  meanReward: number | null;
}

/** Reads the summaries out of mlagents-learn's console output (stats.py ConsoleWriter's format). */
function parseSummaries(output: string): Summary[] {
  const pattern = /Step: (\d+)\. Time Elapsed: ([\d.]+) s\.(?: Mean Reward: (-?[\d.]+)\.)?/g;
  return [...output.matchAll(pattern)].map((m) => ({
    step: Number(m[1]),
    elapsedSeconds: Number(m[2]),
    meanReward: m[3] === undefined ? null : Number(m[3]),
  }));
}

interface Run {
  output: string;
  wallSeconds: number;
  exitCode: number | null;
}

/** Runs mlagents-learn to its end; a run that fails throws with the end of its output. */
async function runCliToEnd(cwd: string, args: string[]): Promise<Run> {
  const run = await runCli(cwd, args);
  if (run.exitCode !== 0) throw new Error(`mlagents-learn ${args.join(' ')} exited with ${run.exitCode}:\n${run.output.slice(-2000)}`);
  return run;
}

/**
 * Runs the built CLI in `cwd`; after `stopAfterSeconds` (if given), or once `stopWhen` says so of
 * the output so far, sends SIGINT, as a user's Ctrl+C.
 */
function runCli(cwd: string, args: string[], stopAfterSeconds?: number, stopWhen?: (output: string) => boolean): Promise<Run> {
  const start = performance.now();
  const child = spawn(process.execPath, [CLI, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    if (stopWhen?.(output)) child.kill('SIGINT');
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = stopAfterSeconds === undefined ? undefined : setTimeout(() => child.kill('SIGINT'), stopAfterSeconds * 1000);
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ output, wallSeconds: (performance.now() - start) / 1000, exitCode: code });
    });
  });
}

/**
 * (a) Steps per second between the first and the last summary of the run, so that start-up (backend,
 * environment launch) is left out; with one summary only, its step over its elapsed time.
 */
async function threeDBallThroughput(numEnvs: number, threaded: boolean, seconds: number): Promise<string[]> {
  const cwd = tempDir(`bench-3dball-${numEnvs}`);
  // threaded: true runs the PPO updates in a worker thread while the environments keep stepping.
  const config = YAML.parse(fs.readFileSync(THREE_D_BALL_CONFIG, 'utf8'));
  config.behaviors['3DBall'].threaded = threaded;
  const configFile = path.join(cwd, '3DBall.yaml');
  fs.writeFileSync(configFile, YAML.stringify(config));
  const run = await runCli(
    cwd,
    [configFile, `--run-id=envs${numEnvs}`, '--env=builtin:3DBall', `--num-envs=${numEnvs}`,
      `--base-port=${await freePort()}`, '--seed=1', '--backend=wasm'],
    seconds,
  );
  const summaries = parseSummaries(run.output);
  const first = summaries[0];
  const last = summaries[summaries.length - 1];
  let rate = 'n/a (no summary)';
  if (summaries.length >= 2) rate = ((last.step - first.step) / (last.elapsedSeconds - first.elapsedSeconds)).toFixed(0);
  else if (first) rate = `${(first.step / first.elapsedSeconds).toFixed(0)} (one summary, start-up included)`;
  if (run.exitCode !== 0) rate += ` (exit code ${run.exitCode}: ${run.output.trim().split('\n').slice(-1)[0]})`;
  return [String(numEnvs), String(threaded), seconds.toFixed(0), String(summaries.length), last ? String(last.step) : '0',
    last?.meanReward?.toFixed(3) ?? '', rate];
}

/** (b) bench/ppo-update.ts run as it is; its rows of our optimizer give milliseconds per minibatch and seconds per update. */
async function ppoUpdateSeconds(backends: string): Promise<string[][]> {
  const tsx = path.join(ROOT, 'node_modules', '.bin', 'tsx');
  const child = spawn(tsx, [path.join(ROOT, 'bench', 'ppo-update.ts'), '--backends', backends], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise((resolve) => child.on('exit', resolve));
  return output
    .split('\n')
    .map((line) => line.trim().split(/\s{2,}/))
    .filter((cells) => cells[1] === 'ours' || cells[1] === 'straightforward')
    .map((cells) => [cells[0], cells[1], cells[2], cells[3]]);
}

interface SimpleGoalCase {
  name: string;
  maxSteps: number;
  hyperparameters: Record<string, number>;
  envArgs: string[];
  upstream: string;
}

/** Upstream's test_simple_ppo (both action kinds) and test_2d_ppo (continuous), test_simple_rl.py. */
const SIMPLE_GOAL_CASES: SimpleGoalCase[] = [
  { name: '1D continuous', maxSteps: 3000, hyperparameters: {}, envArgs: ['--continuous', '1', '--discrete', '0'], upstream: '~5' },
  { name: '1D discrete', maxSteps: 3000, hyperparameters: {}, envArgs: ['--continuous', '0', '--discrete', '1'], upstream: '~5' },
  {
    name: '2D continuous',
    maxSteps: 10000,
    hyperparameters: { batch_size: 64, buffer_size: 640 },
    envArgs: ['--continuous', '2', '--discrete', '0', '--step-size', '0.8'],
    upstream: '12-21',
  },
];

/**
 * Trains a built-in environment with one of config/'s files (its max_steps, or `maxSteps`) and
 * says when the summaries' mean reward first reached `threshold`, and the last one.
 */
async function trainToThreshold(
  configFile: string,
  behavior: string,
  environment: string,
  threshold: number,
  maxSteps?: number,
  change?: { readonly label: string; readonly apply: (settings: Record<string, unknown>) => void },
  world?: { readonly envArgs: string[]; readonly fullBudget: boolean },
): Promise<string[]> {
  const cwd = tempDir(`bench-${environment}`);
  const config = YAML.parse(fs.readFileSync(configFile, 'utf8'));
  if (maxSteps !== undefined) config.behaviors[behavior].max_steps = maxSteps;
  change?.apply(config.behaviors[behavior]);
  if (world !== undefined) config.env_settings = { ...config.env_settings, env_args: world.envArgs };
  const file = path.join(cwd, path.basename(configFile));
  fs.writeFileSync(file, YAML.stringify(config));
  const args = [file, `--run-id=${environment}`, `--env=builtin:${environment}`, `--base-port=${await freePort()}`, '--seed=1', '--backend=wasm'];
  const reachedIn = (output: string) => parseSummaries(output).find((s) => s.meanReward !== null && s.meanReward >= threshold);
  // Stopped (Ctrl+C: the model is saved) once the threshold is reached: the rest of the budget says
  // nothing more, unless the whole budget is asked for (whether it stays there).
  const run = await runCli(cwd, args, undefined, (output) => world?.fullBudget !== true && reachedIn(output) !== undefined);
  const summaries = parseSummaries(run.output);
  const reached = reachedIn(run.output);
  const last = summaries[summaries.length - 1];
  const row = [
    path.relative(ROOT, configFile) + (change === undefined ? '' : ` ${change.label}`),
    String(config.behaviors[behavior].max_steps),
    run.wallSeconds.toFixed(1) + (run.exitCode === 0 ? '' : ` (exit code ${run.exitCode})`),
    reached ? `step ${reached.step} (${reached.elapsedSeconds.toFixed(1)} s)` : 'not reached',
    last?.meanReward?.toFixed(3) ?? '',
  ];
  if (world?.fullBudget) row.push(summaries.map((s) => s.meanReward?.toFixed(2) ?? '-').join(' '));
  return row;
}

/**
 * (i) Sorter under its curriculum for `minutes` of wall time: each summary with the lesson num_tiles
 * was in when it was printed (the trainer logs every lesson it enters).
 */
async function sorterCurriculum(minutes: number, areas: number): Promise<string[][]> {
  const cwd = tempDir('bench-sorter');
  const config = path.join(ROOT, 'config', 'ppo', 'Sorter_curriculum.yaml');
  const args = [config, '--run-id=sorter', '--env=builtin:Sorter', `--num-areas=${areas}`, `--base-port=${await freePort()}`, '--seed=1', '--backend=wasm'];
  const run = await runCli(cwd, args, minutes * 60);
  const rows: string[][] = [];
  let lesson = '';
  for (const line of run.output.split('\n')) {
    const entered = /Parameter 'num_tiles' is in lesson '([^']+)' and has value '([^']+)'/.exec(line);
    if (entered) lesson = `${entered[1]} (${entered[2]})`;
    const [summary] = parseSummaries(line);
    if (summary) rows.push([String(summary.step), summary.elapsedSeconds.toFixed(0), summary.meanReward?.toFixed(3) ?? '-', lesson]);
  }
  if (run.exitCode !== 0) rows.push([`exit code ${run.exitCode}`, '', '', run.output.trim().split('\n').slice(-1)[0]]);
  return rows;
}

/**
 * (c) The whole run's wall time (process start to exit, as upstream's test time), and the elapsed
 * time of the first summary whose mean reward reaches 0.9. A summary's mean covers the episodes of
 * its period, not upstream's last 5 episodes, so the first crossing is indicative only.
 */
async function simpleGoalTime(testCase: SimpleGoalCase): Promise<string[]> {
  const cwd = tempDir('bench-simplegoal');
  const file = writeSimplePpoConfig(cwd, testCase.maxSteps);
  const config = YAML.parse(fs.readFileSync(file, 'utf8'));
  Object.assign(config.behaviors['1D'].hyperparameters, testCase.hyperparameters);
  fs.writeFileSync(file, YAML.stringify(config));
  const run = await runCli(cwd, await simpleGoalArgs('bench', '--env-args', ...testCase.envArgs));
  const summaries = parseSummaries(run.output);
  const reached = summaries.find((s) => s.meanReward !== null && s.meanReward >= 0.9);
  const last = summaries[summaries.length - 1];
  return [
    testCase.name,
    String(testCase.maxSteps),
    run.wallSeconds.toFixed(1) + (run.exitCode === 0 ? '' : ` (exit code ${run.exitCode})`),
    reached ? `${reached.elapsedSeconds.toFixed(1)} (step ${reached.step})` : 'not reached',
    last?.meanReward?.toFixed(3) ?? '',
    testCase.upstream,
  ];
}

/** A scalar's value at each summary step, from the TensorBoard event files of one behavior's folder. */
function scalarSeries(folder: string, tag: string): Map<number, number> {
  const series = new Map<number, number>();
  for (const file of listEventFiles(folder)) {
    for (const event of readEventFile(file)) {
      for (const value of event.summary?.value ?? []) {
        if (value.tag === tag && value.simple_value !== undefined) series.set(Number(event.step), value.simple_value);
      }
    }
  }
  return series;
}

interface RewardWindow {
  /** The window's first step: it holds the summaries at steps start + 1 to start + HALLWAY_WINDOW_STEPS. */
  start: number;
  mean: number;
}

/** Each complete window's mean of the summaries' mean rewards; the last window counts once a summary reaches its end. */
function rewardWindows(summaries: ReadonlyArray<readonly [step: number, meanReward: number]>): RewardWindow[] {
  const sums = new Map<number, { total: number; count: number }>();
  let lastStep = 0;
  for (const [step, reward] of summaries) {
    const start = Math.floor((step - 1) / HALLWAY_WINDOW_STEPS) * HALLWAY_WINDOW_STEPS;
    const sum = sums.get(start) ?? { total: 0, count: 0 };
    sums.set(start, { total: sum.total + reward, count: sum.count + 1 });
    lastStep = Math.max(lastStep, step);
  }
  return [...sums]
    .filter(([start]) => start + HALLWAY_WINDOW_STEPS <= lastStep)
    .sort((a, b) => a[0] - b[0])
    .map(([start, { total, count }]) => ({ start, mean: total / count }));
}

function windowLabel(window: RewardWindow | undefined): string {
  return window === undefined ? '-' : `${window.mean.toFixed(3)} (${window.start / 1000}-${(window.start + HALLWAY_WINDOW_STEPS) / 1000}k)`;
}

/**
 * (f) Trains the built-in Hallway with config/ppo/Hallway.yaml (without its memory section when
 * `withMemory` is false) up to `maxSteps`, stopped (Ctrl+C: the model is saved) once a window's mean
 * reaches the benchmark. Gives the run's behavior folder, where its event files are.
 */
async function trainHallway(withMemory: boolean, seed: number, maxSteps: number): Promise<{ folder: string; wallSeconds: number; exitCode: number | null }> {
  const cwd = tempDir('bench-hallway');
  const config = YAML.parse(fs.readFileSync(path.join(ROOT, 'config', 'ppo', 'Hallway.yaml'), 'utf8'));
  config.behaviors.Hallway.max_steps = maxSteps;
  if (!withMemory) delete config.behaviors.Hallway.network_settings.memory;
  const file = path.join(cwd, 'Hallway.yaml');
  fs.writeFileSync(file, YAML.stringify(config));
  const runId = withMemory ? 'memory' : 'no-memory';
  const args = [file, `--run-id=${runId}`, '--env=builtin:Hallway', `--base-port=${await freePort()}`, `--seed=${seed}`, '--backend=wasm'];
  const reached = (output: string) =>
    rewardWindows(parseSummaries(output).flatMap((s) => (s.meanReward === null ? [] : [[s.step, s.meanReward] as const]))).some(
      (w) => w.mean >= HALLWAY_BENCHMARK,
    );
  const run = await runCli(cwd, args, undefined, reached);
  return { folder: path.join(cwd, 'results', runId, 'Hallway'), wallSeconds: run.wallSeconds, exitCode: run.exitCode };
}

/**
 * (f) A Hallway run's figures from the event files of its behavior folder (so that a run stopped and
 * resumed by hand counts whole): one summary row, and its windows' means a million steps to a row.
 */
function hallwayRows(label: string, folder: string, wall: string): { summary: string[]; windows: string[][] } {
  const rewards = [...scalarSeries(folder, STAT_KEYS.cumulativeReward)].sort((a, b) => a[0] - b[0]);
  const windows = rewardWindows(rewards);
  const best = windows.reduce<RewardWindow | undefined>((top, w) => (top === undefined || w.mean > top.mean ? w : top), undefined);
  const firstSummary = rewards.find(([, reward]) => reward >= HALLWAY_BENCHMARK);
  const summary = [
    label,
    String(rewards[rewards.length - 1]?.[0] ?? 0),
    wall,
    firstSummary === undefined ? 'not reached' : `step ${firstSummary[0]}`,
    windowLabel(windows.find((w) => w.mean >= HALLWAY_BENCHMARK)),
    windowLabel(best),
    windowLabel(windows[windows.length - 1]),
  ];
  const millions = new Map<number, string[]>();
  for (const w of windows) {
    const million = Math.floor(w.start / 1e6);
    millions.set(million, [...(millions.get(million) ?? []), w.mean.toFixed(2)]);
  }
  return { summary, windows: [...millions].map(([million, means]) => [label, `${million}-${million + 1}M`, means.join(' ')]) };
}

/**
 * (i) Trains DungeonEscape with one of its configs for its whole budget (seed 1); a row per summary:
 * the environment's group reward and escape rate, and the trainer's group cumulative reward (POCA's only).
 */
async function trainDungeonEscape(trainer: 'poca' | 'ppo', maxSteps?: number): Promise<{ rows: string[][]; last: string[]; wallSeconds: number }> {
  const cwd = tempDir(`bench-coop-${trainer}`);
  const config = YAML.parse(fs.readFileSync(path.join(ROOT, 'config', trainer, 'DungeonEscape.yaml'), 'utf8'));
  if (maxSteps !== undefined) config.behaviors.DungeonEscape.max_steps = maxSteps;
  const file = path.join(cwd, 'DungeonEscape.yaml');
  fs.writeFileSync(file, YAML.stringify(config));
  const args = [file, `--run-id=${trainer}`, '--env=builtin:DungeonEscape', `--base-port=${await freePort()}`, '--seed=1', '--backend=wasm'];
  const run = await runCliToEnd(cwd, args);
  const folder = path.join(cwd, 'results', trainer, 'DungeonEscape');
  const [reward, escaped, cumulative] = [GROUP_REWARD_STAT, ESCAPED_STAT, STAT_KEYS.groupCumulativeReward].map((tag) => scalarSeries(folder, tag));
  const rows = [...reward.keys()].map((step) => [
    trainer,
    String(step),
    reward.get(step)!.toFixed(3),
    escaped.get(step)?.toFixed(3) ?? '',
    cumulative.get(step)?.toFixed(3) ?? '-',
  ]);
  return { rows, last: rows[rows.length - 1] ?? [trainer, 'no summary'], wallSeconds: run.wallSeconds };
}

/**
 * (k) Trains Tennis with self-play (seed 1): the learning policy's ELO at every summary, then the final checkpoint's
 * games against the first checkpoint, the random player and the heuristic. The ghost trainer keeps one folder for the
 * behavior, Tennis, as upstream's does for both teams.
 */
async function trainTennis(maxSteps?: number): Promise<{ elo: string[][]; duels: string[][]; wallSeconds: number }> {
  const cwd = tempDir('bench-selfplay');
  const config = YAML.parse(fs.readFileSync(path.join(ROOT, 'config', 'ppo', 'Tennis.yaml'), 'utf8'));
  const settings = config.behaviors.Tennis;
  if (maxSteps !== undefined) settings.max_steps = maxSteps;
  settings.checkpoint_interval = TENNIS_CHECKPOINT_STEPS;
  settings.keep_checkpoints = Math.ceil(settings.max_steps / TENNIS_CHECKPOINT_STEPS) + 1;
  const file = path.join(cwd, 'Tennis.yaml');
  fs.writeFileSync(file, YAML.stringify(config));
  const args = [file, '--run-id=selfplay', '--env=builtin:Tennis', `--base-port=${await freePort()}`, '--seed=1', '--backend=wasm'];
  const run = await runCliToEnd(cwd, args);
  const folder = path.join(cwd, 'results', 'selfplay', 'Tennis');
  const elo = [...scalarSeries(folder, STAT_KEYS.selfPlayElo)].map(([step, value]) => [String(step), value.toFixed(1)]);
  const checkpoints = fs
    .readdirSync(folder)
    .map((name) => ({ name, step: Number(/^Tennis-(\d+)\.ckpt$/.exec(name)?.[1]) }))
    .filter((c) => Number.isInteger(c.step))
    .sort((a, b) => a.step - b.step)
    .map((c) => path.join(folder, c.name));
  if (checkpoints.length < 2) throw new Error(`${folder} holds ${checkpoints.length} checkpoint(s): the final one needs an earlier one to play.`);
  const final = checkpoints[checkpoints.length - 1];
  const duels: string[][] = [];
  for (const opponent of [await untrainedTennis(cwd, config), checkpoints[0], 'random', 'heuristic']) {
    duels.push(duelRow(await duel(final, opponent, { games: DUEL_GAMES, seed: 1 })));
  }
  return { elo, duels, wallSeconds: run.wallSeconds };
}

/**
 * (k) The initial policy: the same configuration and seed run to max_steps 1, so its final checkpoint holds the
 * weights the self-play run started from, before any update.
 */
async function untrainedTennis(cwd: string, config: { behaviors: { Tennis: { max_steps: number } } }): Promise<string> {
  const file = path.join(cwd, 'Tennis-untrained.yaml');
  fs.writeFileSync(file, YAML.stringify({ ...config, behaviors: { Tennis: { ...config.behaviors.Tennis, max_steps: 1 } } }));
  const args = [file, '--run-id=untrained', '--env=builtin:Tennis', `--base-port=${await freePort()}`, '--seed=1', '--backend=wasm'];
  await runCliToEnd(cwd, args);
  const folder = path.join(cwd, 'results', 'untrained', 'Tennis');
  const checkpoint = fs.readdirSync(folder).find((name) => /^Tennis-\d+\.ckpt$/.test(name));
  if (checkpoint === undefined) throw new Error(`${folder} holds no Tennis-<step>.ckpt.`);
  return path.join(folder, checkpoint);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '40' },
      'num-envs': { type: 'string', default: '1,4' },
      threaded: { type: 'string', default: 'false,true' },
      backends: { type: 'string', default: 'wasm,cpu' },
      'sac-3dball': { type: 'boolean', default: false },
      visual: { type: 'boolean', default: false },
      hallway: { type: 'string' },
      'hallway-steps': { type: 'string', default: '2000000' },
      'hallway-seed': { type: 'string', default: '1' },
      'hallway-from': { type: 'string' },
      pyramids: { type: 'string' },
      imitation: { type: 'boolean', default: false },
      'pyramids-steps': { type: 'string', default: '250000' },
      sorter: { type: 'boolean', default: false },
      'sorter-minutes': { type: 'string', default: '40' },
      'sorter-areas': { type: 'string', default: '8' },
      coop: { type: 'string' },
      'coop-steps': { type: 'string' },
      selfplay: { type: 'boolean', default: false },
      'selfplay-steps': { type: 'string' },
      visual3dball: { type: 'boolean', default: false },
      'visual3dball-steps': { type: 'string' },
    },
  });
  const seconds = Number(values.seconds);

  if (values.hallway !== undefined || values['hallway-from'] !== undefined) {
    const summaries: string[][] = [];
    const windows: string[][] = [];
    const add = (rows: { summary: string[]; windows: string[][] }) => {
      summaries.push(rows.summary);
      windows.push(...rows.windows);
    };
    const seed = Number(values['hallway-seed']);
    for (const run of values.hallway?.split(',') ?? []) {
      const trained = await trainHallway(run !== 'no-memory', seed, Number(values['hallway-steps']));
      const wall = trained.wallSeconds.toFixed(0) + (trained.exitCode === 0 ? '' : ` (exit code ${trained.exitCode})`);
      add(hallwayRows(`${run}, seed ${seed}`, trained.folder, wall));
    }
    for (const folder of values['hallway-from']?.split(',') ?? []) add(hallwayRows(folder, folder, 'by hand'));
    const windowed = `mean of the summaries in each ${HALLWAY_WINDOW_STEPS / 1000}k steps`;
    printTable(
      `(f) built-in Hallway, config/ppo/Hallway.yaml with and without its memory, to upstream's benchmark ${HALLWAY_BENCHMARK} as a ${windowed} (wasm backend)`,
      ['run', 'steps', 'run wall s', `first summary >= ${HALLWAY_BENCHMARK}`, `first window >= ${HALLWAY_BENCHMARK}`, 'best window', 'last window'],
      summaries,
    );
    printTable(`(f) Hallway's windows: ${windowed}, ten to a row`, ['run', 'steps', 'window means'], windows);
    return;
  }

  if (values.imitation) {
    const demo = path.join(tempDir('bench-basic-demo'), 'ExpertBasic.demo');
    const recording = ['--heuristic', '--record', demo, '--record-steps', String(BASIC_DEMO_RECORDS), '--steps', String(2 * BASIC_DEMO_RECORDS)];
    execFileSync(process.execPath, [builtinExecutable('Basic'), ...recording]);
    const recorded = {
      label: `(demo_path: ${BASIC_DEMO_RECORDS} records of the heuristic)`,
      apply: (settings: Record<string, unknown>) => {
        ((settings.reward_signals as Record<string, Record<string, unknown>>).gail).demo_path = demo;
        (settings.behavioral_cloning as Record<string, unknown>).demo_path = demo;
      },
    };
    const world = { envArgs: [], fullBudget: true };
    printTable(
      `(h) built-in Basic: imitation of its heuristic against PPO alone, ${BASIC_STEPS} steps (seed 1, wasm backend)`,
      ['config', 'max_steps', 'run wall s', `first summary mean >= ${HEURISTIC_BASIC}`, 'last summary mean', 'every summary mean'],
      [
        await trainToThreshold(path.join(ROOT, 'config', 'imitation', 'Basic.yaml'), 'Basic', 'Basic', HEURISTIC_BASIC, BASIC_STEPS, recorded, world),
        await trainToThreshold(BASIC_CONFIG, 'Basic', 'Basic', HEURISTIC_BASIC, BASIC_STEPS, undefined, world),
      ],
    );
    return;
  }

  if (values.pyramids !== undefined) {
    const curiosity = path.join(ROOT, 'config', 'ppo', 'Pyramids.yaml');
    const runs: Record<string, Parameters<typeof trainToThreshold>> = {
      curiosity: [curiosity, 'Pyramids', 'Pyramids', PYRAMIDS_SOLVED],
      rnd: [path.join(ROOT, 'config', 'ppo', 'PyramidsRND.yaml'), 'Pyramids', 'Pyramids', PYRAMIDS_SOLVED],
      ppo: [curiosity, 'Pyramids', 'Pyramids', PYRAMIDS_SOLVED],
    };
    const extrinsicOnly = {
      label: 'without curiosity (extrinsic only)',
      apply: (settings: Record<string, unknown>) => delete (settings.reward_signals as Record<string, unknown>).curiosity,
    };
    const steps = Number(values['pyramids-steps']);
    const world = { envArgs: PYRAMIDS_WORLD, fullBudget: true };
    const rows: string[][] = [];
    for (const name of values.pyramids.split(',')) {
      const run = runs[name];
      if (run === undefined) throw new Error(`--pyramids: unknown run "${name}"; the runs are ${Object.keys(runs).join(', ')}.`);
      rows.push(await trainToThreshold(run[0], run[1], run[2], run[3], steps, name === 'ppo' ? extrinsicOnly : undefined, world));
    }
    printTable(
      `(g) built-in Pyramids (${PYRAMIDS_WORLD.join(' ')}), curiosity, RND and plain PPO, the same budget (seed 1, wasm backend)`,
      ['config', 'max_steps', 'run wall s', `first summary mean >= ${PYRAMIDS_SOLVED}`, 'last summary mean', 'every summary mean'],
      rows,
    );
    return;
  }

  if (values.sorter) {
    const minutes = Number(values['sorter-minutes']);
    const areas = Number(values['sorter-areas']);
    printTable(
      `(i) built-in Sorter, config/ppo/Sorter_curriculum.yaml as it is, ${areas} areas, stopped after ${minutes} min (seed 1, wasm backend)`,
      ['step', 'elapsed s', 'mean reward', 'num_tiles lesson'],
      await sorterCurriculum(minutes, areas),
    );
    return;
  }

  if (values.coop !== undefined) {
    const results = [];
    for (const name of values.coop.split(',')) {
      if (name !== 'poca' && name !== 'ppo') throw new Error(`--coop: unknown run "${name}"; the runs are poca, ppo.`);
      results.push(await trainDungeonEscape(name, values['coop-steps'] === undefined ? undefined : Number(values['coop-steps'])));
    }
    const columns = ['trainer', 'step', GROUP_REWARD_STAT, ESCAPED_STAT, STAT_KEYS.groupCumulativeReward];
    const title = '(j) built-in DungeonEscape, config/poca and config/ppo DungeonEscape.yaml, the same budget (seed 1, wasm backend)';
    printTable(`${title}: every summary`, columns, results.flatMap((r) => r.rows));
    printTable(`${title}: the last summary`, [...columns, 'run wall s'], results.map((r) => [...r.last, r.wallSeconds.toFixed(1)]));
    return;
  }

  if (values.selfplay) {
    const { elo, duels, wallSeconds } = await trainTennis(values['selfplay-steps'] === undefined ? undefined : Number(values['selfplay-steps']));
    const title = '(k) built-in Tennis, config/ppo/Tennis.yaml (self-play), seed 1, wasm backend';
    printTable(`${title}: ${STAT_KEYS.selfPlayElo} at every summary (run wall ${wallSeconds.toFixed(0)} s)`, ['step', 'ELO'], elo);
    printTable(`${title}: the final checkpoint's games (points), bench/duel-eval.ts, seed 1`, DUEL_COLUMNS, duels);
    return;
  }

  if (values.visual3dball) {
    const config = path.join(ROOT, 'config', 'ppo', 'Visual3DBall.yaml');
    const steps = values['visual3dball-steps'] === undefined ? undefined : Number(values['visual3dball-steps']);
    printTable(
      '(l) built-in Visual3DBall, config/ppo/Visual3DBall.yaml to its max_steps, never stopped early (seed 1, wasm backend)',
      ['config', 'max_steps', 'run wall s', 'first summary mean >= 80', 'last summary mean', 'every summary mean (one per summary_freq: 20000 steps)'],
      [await trainToThreshold(config, 'Visual3DBall', 'Visual3DBall', 80, steps, undefined, { envArgs: [], fullBudget: true })],
    );
    return;
  }

  if (values.visual) {
    printTable(
      '(e) visual observations: built-in GridWorld (threshold 0.8, upstream\'s benchmark) and Visual3DBall (80), their configs and budgets (seed 1, wasm backend)',
      ['config', 'max_steps', 'run wall s', 'first summary mean >= threshold', 'last summary mean'],
      [
        await trainToThreshold(path.join(ROOT, 'config', 'ppo', 'GridWorld.yaml'), 'GridWorld', 'GridWorld', 0.8),
        await trainToThreshold(path.join(ROOT, 'config', 'ppo', 'Visual3DBall.yaml'), 'Visual3DBall', 'Visual3DBall', 80),
      ],
    );
    return;
  }


  const throughput: string[][] = [];
  for (const numEnvs of (values['num-envs'] as string).split(',').map(Number)) {
    for (const threaded of (values.threaded as string).split(',').map((t) => t === 'true')) {
      throughput.push(await threeDBallThroughput(numEnvs, threaded, seconds));
    }
  }
  printTable(
    '(a) built-in 3DBall, config/ppo/3DBall.yaml (time_scale 1000, summary every 12000 steps), wasm backend, stopped by SIGINT',
    ['num-envs', 'threaded', 'wall s', 'summaries', 'last step', 'last mean reward', 'steps/s (agent steps, as the run counts them, between first and last summary)'],
    throughput,
  );
  console.log('upstream (Python ML-Agents PPO on 3DBall): none measured on this machine');

  printTable(
    '(b) one PPO update of 3DBall (buffer 12000, batch 64, 3 epochs: 561 minibatches), bench/ppo-update.ts',
    ['backend', 'version', 'ms/minibatch', 's/update'],
    await ppoUpdateSeconds(values.backends as string),
  );

  const times: string[][] = [];
  for (const testCase of SIMPLE_GOAL_CASES) times.push(await simpleGoalTime(testCase));
  printTable(
    '(c) SimpleGoal, upstream\'s test configs and budgets (seed 1, wasm backend)',
    ['case', 'max_steps', 'run wall s', 'first summary mean >= 0.9: s', 'last summary mean', 'Python ML-Agents s'],
    times,
  );

  printTable(
    `(d) built-in Basic, config/ppo/Basic.yaml with max_steps ${BASIC_STEPS} (seed 1, wasm backend)`,
    ['config', 'max_steps', 'run wall s', 'first summary mean >= 0.8', 'last summary mean'],
    [await trainToThreshold(BASIC_CONFIG, 'Basic', 'Basic', 0.8, BASIC_STEPS)],
  );

  console.log('\nSAC (bench/sac.ts):');
  await sacBenchmarks({ backends: values.backends as string, minSeconds: 2, seed: 1, ball3d: values['sac-3dball'] as boolean });
}

void main();
