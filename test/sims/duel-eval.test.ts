/**
 * @jest-environment ./test/export/onnxruntime-environment.js
 *
 * bench/duel-eval.ts: games of the built-in Tennis between two players in process. The scripted
 * players against each other, and trained-policy files as a run writes them: a checkpoint in its
 * run folder beside the run's configuration.yaml, and the exported .onnx.
 */
import * as fs from 'fs';
import * as path from 'path';
import { DUEL_COLUMNS, TENNIS_SPEC, duel, duelRow, loadPlayer } from '../../bench/duel-eval';
import { memoryLogger } from '../../src/common/logger';
import { loadRunOptions } from '../../src/config';
import { writePolicyModel } from '../../src/export/onnx-export';
import { selectBackend } from '../../src/networks/backend';
import { OBSERVATION_SIZE, createCourts } from '../../src/sims/envs/tennis';
import { Academy } from '../../src/sims/sdk/academy';
import { StatsRegistry } from '../../src/stats';
import { createTrainer } from '../../src/trainers/trainer-factory';
import { tempDir } from '../helpers/paths';

const CONFIGURATION = `
behaviors:
  Tennis:
    trainer_type: ppo
    network_settings: {normalize: true, hidden_units: 16, num_layers: 1}
`;

/** A run folder as mlagents-learn writes it: configuration.yaml, and a checkpoint of the Tennis behavior with weights drawn from `seed`. */
function runWithCheckpoint(seed: number): { checkpoint: string; onnx: string } {
  const run = tempDir('duel-run');
  fs.writeFileSync(path.join(run, 'configuration.yaml'), CONFIGURATION);
  const settings = loadRunOptions([path.join(run, 'configuration.yaml')], run, memoryLogger()).behaviors.Tennis;
  const trainer = createTrainer({ behaviorName: 'Tennis', spec: TENNIS_SPEC, settings, stats: new StatsRegistry().reporter('Tennis'), seed, trainModel: false });
  fs.mkdirSync(path.join(run, 'Tennis'));
  const checkpoint = path.join(run, 'Tennis', 'Tennis-1000.ckpt');
  trainer.saveCheckpoint(checkpoint, 1000);
  const onnx = path.join(run, 'Tennis', 'Tennis-1000.onnx');
  writePolicyModel(onnx, trainer.model, TENNIS_SPEC);
  return { checkpoint, onnx };
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe('duel-eval: Tennis games between two players, in process', () => {
  it('the heuristic beats the random player in a clear majority of 200 games, and a seed replays the same games', async () => {
    const result = await duel('heuristic', 'random', { games: 200, seed: 1 });
    expect(result).toMatchObject({ first: 'heuristic', second: 'random', games: 200 });
    expect(result.wins + result.draws + result.losses).toBe(200);
    expect(result.wins).toBeGreaterThan(0.85 * 200);
    expect(await duel('heuristic', 'random', { games: 200, seed: 1 })).toEqual(result);
    // From the other side the same players give the mirror image.
    const reversed = await duel('random', 'heuristic', { games: 200, seed: 1 });
    expect(reversed.losses).toBeGreaterThan(0.85 * 200);
    expect(duelRow(result)).toHaveLength(DUEL_COLUMNS.length);
    expect(duelRow(result)[3]).toBe(`${result.wins} (${((100 * result.wins) / 200).toFixed(1)}%)`);
  }, 60000);

  it('two random players come out about even', async () => {
    const result = await duel('random', 'random', { games: 300, seed: 2 });
    expect(Math.abs(result.wins - result.losses)).toBeLessThan(0.2 * 300);
  }, 60000);

  it('plays a checkpoint with its run\'s settings and weights, sampling from a seed; and its exported .onnx', async () => {
    const [a, b] = [runWithCheckpoint(5), runWithCheckpoint(6)];
    const observations = Float32Array.from({ length: 4 * OBSERVATION_SIZE }, (_, i) => Math.sin(i));
    const agents = createCourts(new Academy(), 2, 10).flatMap((court) => court.agents.map((agent) => agent!));
    const acting = async (file: string) => Array.from(await (await loadPlayer(file, 7)).act(agents, observations));
    // The same file and seed act the same; another file's weights act otherwise.
    const first = await acting(a.checkpoint);
    expect(first).toHaveLength(4 * 2);
    expect(await acting(a.checkpoint)).toEqual(first);
    expect(await acting(b.checkpoint)).not.toEqual(first);

    const games = await duel(a.checkpoint, 'random', { games: 40, seed: 3, courts: 8 });
    expect(games).toMatchObject({ first: 'Tennis-1000.ckpt', games: 40 });
    const exported = await duel(a.onnx, 'heuristic', { games: 20, seed: 3, courts: 8 });
    expect(exported).toMatchObject({ first: 'Tennis-1000.onnx', second: 'heuristic', games: 20 });
    expect(exported.wins + exported.draws + exported.losses).toBe(20);
  }, 60000);

  it('refuses what is not a player, naming what is', async () => {
    await expect(loadPlayer('expert', 1)).rejects.toThrow('"expert" is not a player: give random, heuristic, a checkpoint (.ckpt) or an exported model (.onnx).');
    await expect(loadPlayer('/nowhere/Tennis-5.ckpt', 1)).rejects.toThrow('/nowhere/Tennis-5.ckpt does not exist.');
    const loose = path.join(tempDir('duel-loose'), 'Tennis-5.ckpt');
    fs.copyFileSync(runWithCheckpoint(5).checkpoint, loose);
    await expect(loadPlayer(loose, 1)).rejects.toThrow(`from ${path.join(path.dirname(path.dirname(loose)), 'configuration.yaml')}, which does not exist`);
  }, 30000);
});
