/**
 * Self-play end to end over real gRPC against SimpleGoal playing two teams: upstream's eight ghost
 * cases (test_simple_ghost, test_simple_ghost_fails, test_simple_asymm_ghost,
 * test_simple_asymm_ghost_fails) judged as upstream judges them, and what a self-play run leaves:
 * one folder and model per behavior name, Self-play/ELO in TensorBoard and the console, the ELO in
 * training_status.json, and checkpoints whose self-play state --resume takes up.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { readCheckpointFile } from '../../src/networks/checkpoint-file';
import { listEventFiles, readEventFile } from '../../src/stats';
import { tempDir } from '../helpers/paths';
import { meanOfLastFive, simpleGoalArgs, writeSimplePpoConfig } from './learn-helpers';
import { PocaTrainer } from '../../src/trainers/poca/trainer';
import { UPSTREAM_CASES, UpstreamCase, caseConfiguration, caseRunId, pocaGroupRewards, runSelfPlayCase, upstreamCase } from './upstream-cases';

const GHOST_CASES = UPSTREAM_CASES.filter((c) => c.selfPlay !== undefined).map((c) => c.name);

describe("upstream's self-play cases", () => {
  it.each(GHOST_CASES)('%s', async (name) => {
    const c = upstreamCase(name);
    const outcome = await runSelfPlayCase(c);
    const above = outcome.scores.filter((score) => score > c.threshold).length;
    // Every team above 0.9, or (the _fails cases) one above and one below.
    expect({ scores: outcome.scores, teamsAbove: above }).toEqual({ scores: outcome.scores, teamsAbove: c.selfPlay!.judged === 'every team' ? 2 : 1 });
    expect(outcome.pass).toBe(true);
  }, 120000);
});

describe('self-play around SAC and POCA', () => {
  // Upstream's test_simple_sac and test_simple_poca under test_simple_ghost's self_play (ghost swaps every 400 steps).
  it.each(['test_simple_sac[(0, 1)]', 'test_simple_poca[(0, 1)]'])('%s: the learning team reaches the threshold, the ELO moves', async (name) => {
    const base = upstreamCase(name);
    const teams = ['1D?team=0', '1D?team=1'];
    const c: UpstreamCase = {
      ...base,
      envArgs: [...base.envArgs, '--behavior-name', teams.join(',')],
      selfPlay: { teams, settings: { play_against_latest_model_ratio: 1.0, save_steps: 400, swap_steps: 400 }, judged: 'every team' },
    };
    const cwd = tempDir('learn-self-play-trainers');
    fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration(c));
    const controller = await learn(await simpleGoalArgs(caseRunId(c), '--env-args', ...c.envArgs), { cwd, logger: memoryLogger() });
    const ghost = controller.ghostTrainers.get('1D')!;
    const learner = ghost.learner;
    // POCA's agents are paid as a group: judged on the group episodes, as runUpstreamCase does.
    const rewards = learner instanceof PocaTrainer ? pocaGroupRewards(learner) : ghost.episodeRewardsOf('1D?team=0');
    expect(meanOfLastFive(rewards)).toBeGreaterThan(c.threshold);
    expect(ghost.currentElo).not.toBe(1200);
  }, 120000);
});

describe('mlagents-learn with self_play: results and --resume', () => {
  const cwd = tempDir('learn-self-play');
  const runDir = path.join(cwd, 'results', 'ghost');
  const latest = path.join(runDir, '1D', 'checkpoint.ckpt');
  // test_simple_ghost's settings, saving a checkpoint every 500 steps.
  const config = (maxSteps: number) => caseConfiguration({ ...upstreamCase('test_simple_ghost[(0, 1)]'), maxSteps }).replace('summary_freq: 500', 'summary_freq: 500\n    checkpoint_interval: 500');
  const envArgs = ['--env-args', ...upstreamCase('test_simple_ghost[(0, 1)]').envArgs];

  it('trains one behavior name for both teams: its folder, model, ELO tag, console line and training_status.json', async () => {
    fs.writeFileSync(path.join(cwd, 'config.yaml'), config(1000));
    const logger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('ghost', ...envArgs), { cwd, logger });
    expect([...controller.behaviorTrainers.keys()]).toEqual(['1D']);
    const ghost = controller.ghostTrainers.get('1D')!;
    expect(ghost.learner).toBe(controller.behaviorTrainers.get('1D'));
    expect(fs.readdirSync(runDir).sort()).toEqual(['1D', '1D.onnx', 'configuration.yaml', 'run_logs']);
    // The learning team finished games: the rating moved from initial_elo.
    expect(ghost.currentElo).not.toBe(1200);
    const [events] = listEventFiles(path.join(runDir, '1D')).map(readEventFile);
    const eloValues = events.flatMap((e) => (e.summary?.value ?? []).filter((v) => v.tag === 'Self-play/ELO'));
    expect(eloValues.length).toBeGreaterThan(0);
    expect(logger.lines.map((l) => l.message).filter((m) => /^1D\. Step: \d+\. .* ELO: \d+\.\d{3}\.?$/.test(m)).length).toBeGreaterThan(0);
    const status = JSON.parse(fs.readFileSync(path.join(runDir, 'run_logs', 'training_status.json'), 'utf8'));
    expect(status['1D'].elo).toBe(ghost.currentElo);
    const { meta } = readCheckpointFile(latest);
    expect(meta.selfPlay).toMatchObject({ teamOrder: [0, 1], ratings: expect.arrayContaining([ghost.currentElo]) });
  }, 60000);

  it('--resume takes up the snapshots, ratings, opponent and turn saved in the checkpoint', async () => {
    const saved = readCheckpointFile(latest);
    // Its max_steps already reached, the resumed run only loads and saves again: the state must come back unchanged.
    const logger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('ghost', '--resume', ...envArgs), { cwd, logger });
    const ghost = controller.ghostTrainers.get('1D')!;
    const state = saved.meta.selfPlay as { ratings: number[] };
    expect(ghost.currentElo).toBe(state.ratings[state.ratings.length - 1]);
    const again = readCheckpointFile(latest);
    expect(again.meta.selfPlay).toEqual(saved.meta.selfPlay);
    const snapshotArrays = [...saved.arrays.keys()].filter((name) => name.startsWith('self_play.snapshot.'));
    expect(snapshotArrays.length).toBeGreaterThan(0);
    for (const name of snapshotArrays) expect(again.arrays.get(name)).toEqual(saved.arrays.get(name));

    // Going on: the steps continue from the checkpoint's, and the rating from the saved one.
    fs.writeFileSync(path.join(cwd, 'config.yaml'), config(1500));
    const more = await learn(await simpleGoalArgs('ghost', '--resume', ...envArgs), { cwd, logger: memoryLogger() });
    expect(more.behaviorTrainers.get('1D')!.step).toBeGreaterThanOrEqual(1500);
    const status = JSON.parse(fs.readFileSync(path.join(runDir, 'run_logs', 'training_status.json'), 'utf8'));
    expect(status['1D'].elo).toBe(more.ghostTrainers.get('1D')!.currentElo);
  }, 60000);
});

describe('mlagents-learn: teams without self_play', () => {
  it('every team of a behavior name feeds its one trainer and acts with its policy', async () => {
    const cwd = tempDir('learn-teams');
    writeSimplePpoConfig(cwd, 3000);
    const controller = await learn(await simpleGoalArgs('teams', '--env-args', '--behavior-name', '1D?team=0,1D?team=1'), { cwd, logger: memoryLogger() });
    expect([...controller.behaviorTrainers.keys()]).toEqual(['1D']);
    expect(controller.ghostTrainers.size).toBe(0);
    expect(meanOfLastFive(controller.behaviorTrainers.get('1D')!.episodeRewards)).toBeGreaterThan(0.9);
    expect(fs.readdirSync(path.join(cwd, 'results', 'teams')).sort()).toEqual(['1D', '1D.onnx', 'configuration.yaml', 'run_logs']);
  }, 60000);
});
