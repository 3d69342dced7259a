/**
 * Plays games of the built-in Tennis (src/sims/envs/tennis.ts) between two players, in process:
 * the courts in an Academy of our own, no trainer and no protocol, each side's decisions asked of
 * the player that holds it. A game is one point; a draw is a point that reached the courts'
 * MaxStep. The first player holds team 0 on even courts and team 1 on odd ones, so both play
 * both sides; the first `games` points to end are counted. Everything is seeded: the courts,
 * the random player, and a checkpoint's sampling.
 *
 * A player is one of:
 *   random      actions drawn uniformly in [-1, 1] at every decision (as an untrained policy acts);
 *   heuristic   the court's scripted player (TennisAgent.heuristic);
 *   FILE.ckpt   a checkpoint of ours (results/<run-id>/<Behavior>/<Behavior>-<step>.ckpt), loaded
 *               into the trainer its run's configuration.yaml describes, acting as it acted in
 *               training: actions sampled from the policy;
 *   FILE.onnx   an exported model, run with onnxruntime-node: its deterministic actions (the
 *               means), as onnxruntime's sampling cannot be seeded.
 *
 *   npx tsx bench/duel-eval.ts --first results/tennis/Tennis/Tennis-2000000.ckpt --second random --games 400 --seed 1
 * prints the first player's wins, draws and losses, their rates and the number of games.
 */
import * as fs from 'fs';
import * as path from 'path';
import { parseArgs } from 'util';
import { memoryLogger } from '../src/common/logger';
import { SeededRandom } from '../src/common/random';
import { loadRunOptions, settingsForBehavior } from '../src/config';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../src/env/behavior-spec';
import { DecisionSteps } from '../src/env/steps';
import { selectBackend } from '../src/networks/backend';
import { Academy, ActionsByBehavior, Brain, Decision, InfoBatch } from '../src/sims/sdk/academy';
import { ActionBuffers } from '../src/sims/sdk/agent';
import { DEFAULT_MAX_STEP, OBSERVATION_SIZE, TEAMS, TennisAgent, createCourts, tennisBehavior } from '../src/sims/envs/tennis';
import { StatsRegistry } from '../src/stats';
import { createTrainer } from '../src/trainers/trainer-factory';
import { printTable } from './table';

const ACTIONS = tennisBehavior(0).continuousActions;

/** The spec the trainer sees for either team's behavior. */
export const TENNIS_SPEC: BehaviorSpec = {
  observationSpecs: [{ shape: [OBSERVATION_SIZE], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: '' }],
  actionSpec: ActionSpec.createContinuous(ACTIONS),
};

/** One side's decisions: actions (n x 2) for the agents that ask, from their observations (n x 9). */
export interface DuelPlayer {
  readonly name: string;
  act(agents: readonly TennisAgent[], observations: Float32Array): Float32Array | Promise<Float32Array>;
  close?(): Promise<void>;
}

export interface DuelOptions {
  readonly games: number;
  readonly seed: number;
  /** Courts playing at once (16 by default). */
  readonly courts?: number;
  readonly maxStep?: number;
}

/** The games from the first player's side. */
export interface DuelResult {
  readonly first: string;
  readonly second: string;
  readonly games: number;
  readonly wins: number;
  readonly draws: number;
  readonly losses: number;
}

function randomPlayer(seed: number): DuelPlayer {
  const random = new SeededRandom(seed);
  return { name: 'random', act: (agents) => Float32Array.from({ length: agents.length * ACTIONS }, () => random.range(-1, 1)) };
}

function heuristicPlayer(): DuelPlayer {
  const buffer = new ActionBuffers(ACTIONS, 0);
  return {
    name: 'heuristic',
    act: (agents) => {
      const actions = new Float32Array(agents.length * ACTIONS);
      agents.forEach((agent, row) => {
        buffer.clear();
        agent.heuristic(buffer);
        actions.set(buffer.continuous, row * ACTIONS);
      });
      return actions;
    },
  };
}

/**
 * A checkpoint in its run folder: the trainer its configuration.yaml sets for the behavior (the
 * checkpoint's folder, or the name before `?team=` in it), with the checkpoint's weights.
 */
async function checkpointPlayer(file: string, seed: number): Promise<DuelPlayer> {
  const behavior = path.basename(path.dirname(file));
  const configuration = path.join(path.dirname(path.dirname(file)), 'configuration.yaml');
  if (!fs.existsSync(configuration)) {
    throw new Error(
      `${file}: a checkpoint is read with its run's settings, from ${configuration}, which does not exist. ` +
        'Give the checkpoint where its run wrote it: results/<run-id>/<Behavior>/<Behavior>-<step>.ckpt.',
    );
  }
  const options = loadRunOptions([configuration], path.dirname(configuration), memoryLogger());
  const configured = behavior in options.behaviors ? behavior : behavior.split('?')[0];
  const settings = settingsForBehavior(options, configured, memoryLogger());
  await selectBackend('wasm', memoryLogger());
  const trainer = createTrainer({
    behaviorName: behavior,
    spec: TENNIS_SPEC,
    settings: { ...settings, threaded: false },
    stats: new StatsRegistry().reporter(behavior),
    seed,
    trainModel: false,
  });
  trainer.loadCheckpoint(file);
  return {
    name: path.basename(file),
    act: (agents, observations) => {
      const n = agents.length;
      const zeros = new Float32Array(n);
      const ids = Int32Array.from(agents, (agent) => agent.id);
      const decision = new DecisionSteps([observations], zeros, ids, null, new Int32Array(n), zeros);
      return trainer.policy.decide(decision, null).envAction.continuous;
    },
  };
}

async function onnxPlayer(file: string): Promise<DuelPlayer> {
  const ort = await import('onnxruntime-node');
  const session = await ort.InferenceSession.create(file);
  return {
    name: path.basename(file),
    act: async (agents, observations) => {
      const feeds = { obs_0: new ort.Tensor('float32', observations, [agents.length, OBSERVATION_SIZE]) };
      const output = await session.run(feeds, ['deterministic_continuous_actions']);
      return Float32Array.from(output.deterministic_continuous_actions.data as Float32Array);
    },
    close: () => session.release(),
  };
}

/** The player a command line names: random, heuristic, a .ckpt or a .onnx file. */
export async function loadPlayer(source: string, seed: number): Promise<DuelPlayer> {
  if (source === 'random') return randomPlayer(seed);
  if (source === 'heuristic') return heuristicPlayer();
  if (!source.endsWith('.ckpt') && !source.endsWith('.onnx')) {
    throw new Error(`"${source}" is not a player: give random, heuristic, a checkpoint (.ckpt) or an exported model (.onnx).`);
  }
  if (!fs.existsSync(source)) throw new Error(`${source} does not exist.`);
  return source.endsWith('.ckpt') ? checkpointPlayer(source, seed) : onnxPlayer(source);
}

/** Asks each player for the actions of the agents it holds, across both teams' behaviors. */
class DuelBrain implements Brain {
  constructor(private readonly holder: ReadonlyMap<TennisAgent, DuelPlayer>) {}

  async decide(batches: ReadonlyMap<string, InfoBatch>): Promise<Decision> {
    const rows = new Map<DuelPlayer, Array<{ agent: TennisAgent; batch: InfoBatch; row: number; decision: number }>>();
    for (const batch of batches.values()) {
      let decision = 0;
      for (let row = 0; row < batch.count; row++) {
        if (batch.done[row]) continue;
        const agent = batch.agents[row] as TennisAgent;
        const player = this.holder.get(agent)!;
        const held = rows.get(player) ?? [];
        held.push({ agent, batch, row, decision: decision++ });
        rows.set(player, held);
      }
    }
    const actions = new Map<string, { continuous: Float32Array; discrete: Int32Array }>();
    for (const [name, batch] of batches) {
      actions.set(name, { continuous: new Float32Array(batch.decidingAgents().length * ACTIONS), discrete: new Int32Array(0) });
    }
    for (const [player, held] of rows) {
      const observations = new Float32Array(held.length * OBSERVATION_SIZE);
      held.forEach(({ batch, row }, i) => {
        observations.set(batch.observations[0].subarray(row * OBSERVATION_SIZE, (row + 1) * OBSERVATION_SIZE), i * OBSERVATION_SIZE);
      });
      const chosen = await player.act(held.map((h) => h.agent), observations);
      held.forEach(({ batch, decision }, i) => {
        actions.get(batch.group.name)!.continuous.set(chosen.subarray(i * ACTIONS, (i + 1) * ACTIONS), decision * ACTIONS);
      });
    }
    return { kind: 'actions', actions: actions as ActionsByBehavior };
  }
}

/** Plays `options.games` games between two players; the result is the first player's. */
export async function playDuel(first: DuelPlayer, second: DuelPlayer, options: DuelOptions): Promise<DuelResult> {
  const academy = new Academy();
  academy.seed(options.seed);
  const courts = createCourts(academy, options.courts ?? 16, options.maxStep ?? DEFAULT_MAX_STEP);
  const holder = new Map<TennisAgent, DuelPlayer>();
  const tally = { wins: 0, draws: 0, losses: 0 };
  let played = 0;
  courts.forEach((court, c) => {
    const firstTeam = TEAMS[c % 2];
    for (const agent of court.agents) holder.set(agent!, agent!.player.team === firstTeam ? first : second);
    court.onPoint.push((winner) => {
      if (played >= options.games) return;
      played += 1;
      if (winner === null) tally.draws += 1;
      else if (winner === firstTeam) tally.wins += 1;
      else tally.losses += 1;
    });
  });
  academy.reset();
  const brain = new DuelBrain(holder);
  while (played < options.games) await academy.step(brain);
  return { first: first.name, second: second.name, games: played, ...tally };
}

const percent = (count: number, games: number) => `${((100 * count) / games).toFixed(1)}%`;

/** A table row: the players, the games, and the first player's wins, draws and losses with their rates. */
export function duelRow(result: DuelResult): string[] {
  const counted = (count: number) => `${count} (${percent(count, result.games)})`;
  return [result.first, result.second, String(result.games), counted(result.wins), counted(result.draws), counted(result.losses)];
}

export const DUEL_COLUMNS = ['first', 'second', 'games', "first's wins", 'draws', "first's losses"];

/** Loads both players, plays, and closes what they hold. */
export async function duel(firstSource: string, secondSource: string, options: DuelOptions): Promise<DuelResult> {
  // Distinct seeds, so that two random players (or two samplings) do not mirror each other.
  const first = await loadPlayer(firstSource, options.seed + 1);
  const second = await loadPlayer(secondSource, options.seed + 2);
  try {
    return await playDuel(first, second, options);
  } finally {
    await first.close?.();
    await second.close?.();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      first: { type: 'string' },
      second: { type: 'string', default: 'random' },
      games: { type: 'string', default: '400' },
      seed: { type: 'string', default: '1' },
      courts: { type: 'string', default: '16' },
    },
  });
  if (values.first === undefined) throw new Error('--first is missing: random, heuristic, a .ckpt or a .onnx.');
  const [games, seed, courts] = [values.games, values.seed, values.courts].map(Number);
  if (!(Number.isInteger(games) && games > 0)) throw new Error(`--games needs a whole number above 0, got ${values.games}.`);
  const result = await duel(values.first, values.second!, { games, seed, courts });
  printTable(`Tennis, ${games} games (points) in process, ${courts} courts, seed ${seed}`, DUEL_COLUMNS, [duelRow(result)]);
}

if (require.main === module) {
  main().catch((error) => {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(1);
  });
}
