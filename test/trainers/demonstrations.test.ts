/**
 * Demonstrations into a buffer (upstream's demo_to_buffer / make_demo_buffer): the files
 * SimpleGoal records (a real child process) for continuous, discrete and hybrid actions, a folder
 * of them, whole sequences for memory, the refusal of a demonstration of other specs, the
 * demo_path checks before a run starts, and (when ../shared/reference is present) Unity's files
 * against the numbers upstream's own loader gives for them.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { readDemoFile } from '../../src/communicator/demo-file';
import { loadRunOptions } from '../../src/config';
import { ActionSpec, BehaviorSpec } from '../../src/env/behavior-spec';
import { builtinExecutable } from '../../src/sims/builtin';
import { BufferKey, observationKey } from '../../src/trainers/buffer';
import { loadDemonstrations, resolveDemonstrationPaths } from '../../src/trainers/demonstrations';
import { tempDir } from '../helpers/paths';
import { behavior, visualObservation } from '../networks/model-fixtures';

const dir = tempDir('demonstrations');

/** SimpleGoal's heuristic recorded to `name` (records, seed and SimpleGoal's options). */
function record(name: string, records: number, ...envArgs: string[]): string {
  const file = path.join(dir, name);
  execFileSync(process.execPath, [builtinExecutable('SimpleGoal'), '--heuristic', '--record', file, '--record-steps', String(records), '--steps', '1000', '--seed', '4', ...envArgs]);
  return file;
}

const sum = (values: ArrayLike<number>) => Array.from(values).reduce((a, b) => a + b, 0);

describe('demonstrations recorded by SimpleGoal', () => {
  it('pair each record with the reward and done of the next, as upstream\'s make_demo_buffer, and the action decided at it (continuous)', () => {
    const file = record('continuous.demo', 100, '--continuous', '1', '--discrete', '0');
    const records = readDemoFile(file).records;
    expect(records).toHaveLength(100);
    const { spec, buffer } = loadDemonstrations(file, 1);
    expect(spec.actionSpec.equals(new ActionSpec(1, []))).toBe(true);
    expect(buffer.numExperiences).toBe(99);
    expect(buffer.keys().sort()).toEqual([BufferKey.CONTINUOUS_ACTION, BufferKey.DONE, BufferKey.ENVIRONMENT_REWARDS, observationKey(0)].sort());
    for (let t = 0; t < 99; t++) {
      const info = records[t].agent_info!;
      const next = records[t + 1].agent_info!;
      expect(buffer.get(observationKey(0)).row(t)[0]).toBe(info.observations![0].float_data!.data![0]);
      // The decision taken at record t is stored in record t + 1 (Unity's recorder); a terminal record keeps its own.
      const decided = info.done ? records[t] : records[t + 1];
      expect(buffer.get(BufferKey.CONTINUOUS_ACTION).row(t)[0]).toBe(decided.action_info!.continuous_actions![0]);
      expect(buffer.get(BufferKey.ENVIRONMENT_REWARDS).row(t)[0]).toBeCloseTo(next.reward ?? 0, 7);
      expect(buffer.get(BufferKey.DONE).row(t)[0]).toBe(next.done ? 1 : 0);
    }
    // 6 records an episode (the first decision, 4 steps, the terminal step): 16 of them end in the first 99 rows.
    expect(sum(buffer.get(BufferKey.DONE).rows)).toBe(16);
  });

  it('read discrete and hybrid actions, and a folder of files as one stream', () => {
    const discrete = loadDemonstrations(record('discrete.demo', 40, '--continuous', '0', '--discrete', '1'), 1);
    expect(discrete.spec.actionSpec.equals(new ActionSpec(0, [2]))).toBe(true);
    expect(discrete.buffer.get(BufferKey.DISCRETE_ACTION).width).toBe(1);
    // The heuristic's choice is the goal's side (1 for +1, 0 for -1), and every observation shows the
    // goal: each row that is not a terminal record's holds the choice made at its observation, also
    // at an episode's first decision (whose record holds the cleared action, 0, and upstream's
    // make_demo_buffer takes that).
    const goals = discrete.buffer.get(observationKey(0));
    const choices = discrete.buffer.get(BufferKey.DISCRETE_ACTION).rows;
    const records = readDemoFile(discrete.files[0]).records;
    const decisionRows = choices.map((_, t) => (records[t].agent_info!.done ? -1 : t)).filter((t) => t >= 0);
    expect(decisionRows.length).toBeGreaterThan(30);
    for (const t of decisionRows) expect(choices[t]).toBe(goals.row(t)[0] > 0 ? 1 : 0);
    expect(new Set(choices)).toEqual(new Set([0, 1]));

    const folder = path.join(dir, 'hybrid');
    fs.mkdirSync(folder);
    fs.renameSync(record('a.demo', 30, '--continuous', '1', '--discrete', '1'), path.join(folder, 'a.demo'));
    fs.renameSync(record('b.demo', 20, '--continuous', '1', '--discrete', '1'), path.join(folder, 'b.demo'));
    const hybrid = loadDemonstrations(folder, 1);
    expect(hybrid.files.map((f) => path.basename(f))).toEqual(['a.demo', 'b.demo']);
    expect(hybrid.buffer.numExperiences).toBe(49);
    expect(hybrid.buffer.get(BufferKey.CONTINUOUS_ACTION).width).toBe(1);
    expect(hybrid.buffer.get(BufferKey.DISCRETE_ACTION).width).toBe(1);
  });

  it('go in as whole sequences, each episode padded, for a policy with memory', () => {
    const file = record('sequences.demo', 30, '--continuous', '1', '--discrete', '0');
    const { buffer } = loadDemonstrations(file, 4);
    // 29 rows cut after each done: 5 rows (the stream starts at a first decision), then 6, 6, 6, 6;
    // each piece padded to 8 rows.
    expect(buffer.numExperiences).toBe(40);
    expect(Array.from(buffer.get(BufferKey.DONE).rows.subarray(0, 8))).toEqual([0, 0, 0, 0, 1, 0, 0, 0]);
  });

  it('are refused for a behavior of other observations or actions, naming the behavior, its setting, both specs and the file', () => {
    const file = record('mismatch.demo', 20, '--continuous', '1', '--discrete', '0');
    const expected: BehaviorSpec = behavior([1], new ActionSpec(0, [2]));
    expect(() => loadDemonstrations(file, 1, { behavior: 'Pusher', spec: expected, setting: 'reward_signals.gail.demo_path' })).toThrow(
      new RegExp(
        '^behaviors\\.Pusher\\.reward_signals\\.gail\\.demo_path: the demonstrations in .*mismatch\\.demo have observations \\[\\(1\\)\\], ' +
          'ActionSpec\\(continuous: 1, discrete branches: \\[\\]\\), but behavior Pusher, which trains on them, has observations \\[\\(1\\) \\[NONE\\]\\], ' +
          'ActionSpec\\(continuous: 0, discrete branches: \\[2\\]\\)\\. Record the demonstrations again with Pusher\'s observations and actions',
      ),
    );
    // An image where the demonstrations hold a vector: the shapes are named too.
    const visual: BehaviorSpec = { observationSpecs: [visualObservation(3, 20, 20)], actionSpec: new ActionSpec(1, []) };
    expect(() => loadDemonstrations(file, 1, { behavior: 'Pusher', spec: visual, setting: 'behavioral_cloning.demo_path' })).toThrow(
      /^behaviors\.Pusher\.behavioral_cloning\.demo_path: .*mismatch\.demo have observations \[\(1\)\].*but behavior Pusher, which trains on them, has observations \[\(3, 20, 20\) \[NONE, TRANSLATIONAL_EQUIVARIANCE, TRANSLATIONAL_EQUIVARIANCE\]\]/,
    );
  });
});

describe('demo_path in a run\'s configuration', () => {
  function options(yaml: string) {
    const cwd = tempDir('demo-paths');
    fs.writeFileSync(path.join(cwd, 'config.yaml'), yaml);
    return { cwd, options: loadRunOptions(['config.yaml', '--run-id=r'], cwd, memoryLogger()) };
  }

  it('is taken from the run\'s folder, in a copy of the options', () => {
    const { cwd, options: loaded } = options(
      'behaviors:\n  A:\n    reward_signals:\n      gail: {demo_path: demos/a.demo}\n    behavioral_cloning: {demo_path: demos}\n',
    );
    fs.mkdirSync(path.join(cwd, 'demos'));
    fs.copyFileSync(record('for-paths.demo', 10), path.join(cwd, 'demos', 'a.demo'));
    const resolved = resolveDemonstrationPaths(loaded, cwd);
    expect(resolved.behaviors.A.reward_signals.gail!.demo_path).toBe(path.join(cwd, 'demos', 'a.demo'));
    expect(resolved.behaviors.A.behavioral_cloning!.demo_path).toBe(path.join(cwd, 'demos'));
    expect(loaded.behaviors.A.reward_signals.gail!.demo_path).toBe('demos/a.demo');
  });

  it('is refused before the run starts when it names nothing to read, with its key', () => {
    const { cwd, options: loaded } = options('behaviors:\n  A:\n    reward_signals:\n      gail: {demo_path: missing.demo}\n');
    expect(() => resolveDemonstrationPaths(loaded, cwd)).toThrow(/behaviors\.A\.reward_signals\.gail\.demo_path.*missing\.demo does not exist/);
    const empty = options('default_settings:\n  behavioral_cloning: {demo_path: empty}\n');
    fs.mkdirSync(path.join(empty.cwd, 'empty'));
    expect(() => resolveDemonstrationPaths(empty.options, empty.cwd)).toThrow(/default_settings\.behavioral_cloning\.demo_path.*no '\.demo' files/);
  });
});

const REFERENCE_DEMOS = path.resolve(__dirname, '../../../shared/reference/demos');

(fs.existsSync(REFERENCE_DEMOS) ? describe : describe.skip)('Unity\'s reference demonstrations (../shared/reference)', () => {
  it('give the rows upstream\'s demo_to_buffer gives (test.demo: its sums, from release_21\'s loader)', () => {
    const { spec, buffer } = loadDemonstrations(path.join(REFERENCE_DEMOS, 'test.demo'), 1, {
      behavior: 'Walker',
      spec: behavior([8], new ActionSpec(2, [])),
      setting: 'behavioral_cloning.demo_path',
    });
    expect(spec.observationSpecs[0].shape).toEqual([8]);
    expect(buffer.numExperiences).toBe(2143);
    expect(sum(buffer.get(BufferKey.DONE).rows)).toBe(21);
    expect(sum(buffer.get(BufferKey.ENVIRONMENT_REWARDS).rows)).toBeCloseTo(213.4, 2);
    expect(sum(buffer.get(observationKey(0)).rows)).toBeCloseTo(6089.8134, 1);
    // The actions: each row's is the one decided at its record, which the next record holds
    // (upstream's loader, taking each record's own, sums them to 0.8167).
    const records = readDemoFile(path.join(REFERENCE_DEMOS, 'test.demo')).records;
    const actions = buffer.get(BufferKey.CONTINUOUS_ACTION);
    for (let t = 0; t < buffer.numExperiences; t++) {
      const decided = records[t].agent_info?.done ? records[t] : records[t + 1];
      // Unity's file is from before hybrid actions: vector_actions_deprecated.
      expect(Array.from(actions.row(t))).toEqual(Array.from(decided.action_info!.vector_actions_deprecated!, Math.fround));
    }
  });

  it('read Basic\'s discrete demonstration', () => {
    const { spec, buffer } = loadDemonstrations(path.join(REFERENCE_DEMOS, 'ExpertBasic.demo'), 1);
    expect(spec.actionSpec.equals(new ActionSpec(0, [3]))).toBe(true);
    const records = readDemoFile(path.join(REFERENCE_DEMOS, 'ExpertBasic.demo')).records;
    expect(buffer.numExperiences).toBe(records.length - 1);
    // Its last record holds no action (the recording closed first): the row before it keeps its own.
    expect(records[records.length - 1].action_info?.vector_actions_deprecated ?? []).toHaveLength(0);
    expect(Array.from(buffer.get(BufferKey.DISCRETE_ACTION).rows).every((a) => a === 2)).toBe(true);
  });
});

if (!fs.existsSync(REFERENCE_DEMOS)) console.log(`skipped the reference demonstrations: ../shared/reference not present (looked for ${REFERENCE_DEMOS})`);
