/**
 * The cases of upstream's trainer test suite (ml-agents/mlagents/trainers/tests/torch_entities/
 * test_simple_rl.py and test_hybrid.py) replicated here: each one's environment options, its
 * configuration (upstream's ppo_dummy_config / sac_dummy_config with the case's changes), its
 * budget and its success threshold, named by pytest's ids. runUpstreamCase trains one over real
 * gRPC against the built-in SimpleGoal and scores it as upstream does (the mean of the last 5
 * finished episodes). The jest suites run a representative subset; `npm run bench:upstream` all.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { execFileSync } from 'child_process';
import { builtinExecutable } from '../../src/sims/builtin';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { PocaTrainer } from '../../src/trainers/poca/trainer';
import { parseBehaviorId } from '../../src/trainers/behavior-identifiers';
import { tempDir } from '../helpers/paths';
import { meanOfLastFive, simpleGoalArgs } from './learn-helpers';

export interface UpstreamCase {
  /** pytest's id, e.g. test_visual_ppo[True-1-action_sizes0] written out readably. */
  readonly name: string;
  readonly trainer: 'ppo' | 'sac' | 'poca';
  readonly maxSteps: number;
  readonly hyperparameters?: Readonly<Record<string, unknown>>;
  readonly network?: Readonly<Record<string, unknown>>;
  readonly summaryFreq?: number;
  /** SimpleGoal's options. */
  readonly envArgs: readonly string[];
  /**
   * The mean of the last 5 episode rewards must reach this (upstream's success_threshold);
   * -Infinity where upstream's is None: the run must only train without failing.
   */
  readonly threshold: number;
  /** Upstream's training_seed where the case names one. */
  readonly seed?: number;
  /**
   * test_gail: SimpleGoal's solved policy (its heuristic) first records this many steps to
   * demos/1D.demo, with these options (upstream's RecordEnvironment, n_demos).
   */
  readonly demonstration?: { readonly records: number; readonly envArgs: readonly string[] };
  /** The behavior's reward_signals and behavioral_cloning, where the case sets them. */
  readonly rewardSignals?: Readonly<Record<string, unknown>>;
  readonly behavioralCloning?: Readonly<Record<string, unknown>>;
  /** Upstream's ghost cases (test_simple_ghost and the like): see SelfPlayCase. */
  readonly selfPlay?: SelfPlayCase;
}

/**
 * A self-play case: SimpleGoal plays one set of agents per team behavior, each configured
 * behavior (the names before `?team=`) trains with these self_play settings, and every team is
 * judged on its own last 5 episodes (upstream's env.final_rewards), the ghosts' included.
 */
export interface SelfPlayCase {
  /** SimpleGoal's behavior names, one per team. */
  readonly teams: readonly string[];
  readonly settings: Readonly<Record<string, number>>;
  /**
   * 'every team': each team's score above the threshold (check_environment_trains); 'one team':
   * one above and one below (the _fails cases: a team left playing an untrained snapshot).
   */
  readonly judged: 'every team' | 'one team';
}

/** Where a case's recorded demonstration goes, relative to its run's folder. */
const DEMO_PATH = 'demos/1D.demo';

/**
 * upstream's ppo_dummy_config(), sac_dummy_config() and poca_dummy_config() (dummy_config.py).
 * Built in Python, PPO's and POCA's keep their settings classes' linear epsilon and beta
 * schedules beside the constant learning rate; from YAML both would follow learning_rate_schedule
 * (upstream's check_hyperparam_schedules), so they are written out.
 */
const DUMMY_CONFIGS = {
  ppo: {
    trainer_type: 'ppo',
    hyperparameters: { learning_rate: 5.0e-3, learning_rate_schedule: 'constant', epsilon_schedule: 'linear', beta_schedule: 'linear', batch_size: 16, buffer_size: 64 },
    network_settings: { num_layers: 1, hidden_units: 32 },
    summary_freq: 500,
    threaded: false,
  },
  sac: {
    trainer_type: 'sac',
    hyperparameters: {
      learning_rate: 5.0e-3,
      learning_rate_schedule: 'constant',
      batch_size: 8,
      buffer_init_steps: 100,
      buffer_size: 5000,
      tau: 0.01,
      init_entcoef: 0.01,
    },
    network_settings: { num_layers: 1, hidden_units: 16 },
    summary_freq: 100,
    threaded: false,
  },
  poca: {
    trainer_type: 'poca',
    hyperparameters: { learning_rate: 5.0e-3, learning_rate_schedule: 'constant', epsilon_schedule: 'linear', beta_schedule: 'linear', batch_size: 16, buffer_size: 64 },
    network_settings: { num_layers: 1, hidden_units: 32 },
    summary_freq: 500,
    threaded: false,
  },
} as const;

/** Their default budgets (max_steps) as upstream's test cases use them. */
const DEFAULT_MAX_STEPS = { ppo: 3000, sac: 1000 } as const;

const actions = ([continuous, discrete]: readonly [number, number]) => ['--continuous', String(continuous), '--discrete', String(discrete)];
const pyActions = ([continuous, discrete]: readonly [number, number]) => `(${continuous}, ${discrete})`;
const visual = (count: number) => ['--num-visual', String(count), '--num-vector', '0'];
const varLen = (numVisual: number, numVector: number, numVarLen: number) => [
  '--num-visual',
  String(numVisual),
  '--num-vector',
  String(numVector),
  '--num-var-len',
  String(numVarLen),
];

function cases(): UpstreamCase[] {
  const list: UpstreamCase[] = [];
  const oneD: Array<[number, number]> = [[0, 1], [1, 0]];
  const hybrid: Array<[number, number]> = [[1, 1], [2, 2], [1, 2], [2, 1]];
  const advanced = ['resnet', 'nature_cnn', 'match3'] as const;
  const advancedImage = (encoder: string) => (encoder === 'match3' ? '5x5x5' : '3x36x36');

  // test_simple_rl.py, PPO
  for (const a of oneD) list.push({ name: `test_simple_ppo[${pyActions(a)}]`, trainer: 'ppo', maxSteps: 3000, envArgs: actions(a), threshold: 0.9 });
  for (const a of [[0, 2], [2, 0]] as Array<[number, number]>) {
    list.push({
      name: `test_2d_ppo[${pyActions(a)}]`,
      trainer: 'ppo',
      maxSteps: 10000,
      hyperparameters: { batch_size: 64, buffer_size: 640 },
      envArgs: [...actions(a), '--step-size', '0.8'],
      threshold: 0.9,
    });
  }
  for (const sharedCritic of [true, false]) {
    for (const numVisual of [1, 2]) {
      for (const a of oneD) {
        list.push({
          name: `test_visual_ppo[shared_critic=${sharedCritic}-num_visual=${numVisual}-${pyActions(a)}]`,
          trainer: 'ppo',
          maxSteps: DEFAULT_MAX_STEPS.ppo,
          hyperparameters: { learning_rate: 3.0e-4, shared_critic: sharedCritic },
          envArgs: [...actions(a), ...visual(numVisual), '--step-size', '0.2'],
          threshold: 0.9,
        });
      }
    }
  }
  for (const encoder of advanced) {
    for (const numVisual of [1, 2]) {
      list.push({
        name: `test_visual_advanced_ppo[${encoder}-num_visual=${numVisual}]`,
        trainer: 'ppo',
        maxSteps: 900,
        summaryFreq: 100,
        hyperparameters: { learning_rate: 3.0e-4 },
        // upstream evolves SAC's network settings here (16 units, 1 layer)
        network: { ...DUMMY_CONFIGS.sac.network_settings, vis_encode_type: encoder },
        envArgs: [...actions([0, 1]), ...visual(numVisual), '--step-size', '0.5', '--vis-obs-size', advancedImage(encoder)],
        threshold: 0.5,
      });
    }
  }
  for (const a of oneD) {
    list.push({
      name: `test_recurrent_ppo[${pyActions(a)}]`,
      trainer: 'ppo',
      maxSteps: 6000,
      hyperparameters: { learning_rate: 1.0e-3, batch_size: 64, buffer_size: 128 },
      network: { memory: { memory_size: 16 } },
      envArgs: [...actions(a), '--memory'],
      threshold: 0.9,
    });
  }
  // test_var_len_obs_and_goal_ppo's goal part alone, without variable-length observations (not
  // an upstream case): the vector observation is the goal signal, conditioning the networks
  // through upstream's hypernetwork (goal_conditioning_type hyper); POCA's network settings,
  // which are PPO's.
  for (const a of oneD) {
    list.push({
      name: `test_goal_ppo[hyper-num_vector=1-${pyActions(a)}]`,
      trainer: 'ppo',
      maxSteps: DEFAULT_MAX_STEPS.ppo,
      hyperparameters: { learning_rate: 3.0e-4 },
      network: { goal_conditioning_type: 'hyper' },
      envArgs: [...actions(a), '--num-vector', '1', '--step-size', '0.2', '--goal-indices', '0'],
      threshold: 0.9,
    });
  }
  // test_var_len_obs_and_goal_ppo: observation 0 is the goal signal, whichever it is: the vector
  // one (the hypernetwork conditions on it), the image (on its encoding), or with neither the
  // first variable-length one (which has no encoding: upstream then builds no hypernetwork).
  for (const numVis of [0, 1]) {
    for (const numVector of [0, 1]) {
      for (const numVarLen of [1, 2]) {
        for (const a of oneD) {
          list.push({
            name: `test_var_len_obs_and_goal_ppo[num_vis=${numVis}-num_vector=${numVector}-num_var_len=${numVarLen}-${pyActions(a)}-hyper]`,
            trainer: 'ppo',
            maxSteps: DEFAULT_MAX_STEPS.ppo,
            hyperparameters: { learning_rate: 3.0e-4 },
            network: { goal_conditioning_type: 'hyper' },
            envArgs: [...actions(a), ...varLen(numVis, numVector, numVarLen), '--step-size', '0.2', '--goal-indices', '0'],
            threshold: 0.9,
          });
        }
      }
    }
  }
  // test_simple_rl.py, POCA: upstream's MultiAgentEnvironment of 2 agents is SimpleGoal --group.
  for (const a of oneD) {
    list.push({ name: `test_simple_poca[${pyActions(a)}]`, trainer: 'poca', maxSteps: 3000, envArgs: [...actions(a), '--group'], threshold: 0.9 });
  }
  // MultiAgentEnvironment keeps its vector observation beside the images here (num_vector 1).
  for (const numVisual of [1, 2]) {
    list.push({
      name: `test_visual_poca[${numVisual}]`,
      trainer: 'poca',
      maxSteps: 3000,
      hyperparameters: { learning_rate: 3.0e-4 },
      envArgs: [...actions([0, 1]), '--num-visual', String(numVisual), '--group'],
      threshold: 0.9,
    });
  }
  // Memory: on MemoryEnvironment (SimpleGoal --memory, no group) to upstream's threshold; on
  // MultiAgentEnvironment (--group) for 500 steps, with no threshold ("just check if LSTM doesn't crash").
  for (const a of oneD) {
    for (const multiagent of [true, false]) {
      list.push({
        name: `test_recurrent_poca[is_multiagent=${multiagent}-${pyActions(a)}]`,
        trainer: 'poca',
        maxSteps: multiagent ? 500 : 6000,
        hyperparameters: { learning_rate: 1.0e-3, batch_size: 64, buffer_size: 128 },
        network: { memory: { memory_size: 16 } },
        envArgs: [...actions(a), multiagent ? '--group' : '--memory'],
        threshold: multiagent ? Number.NEGATIVE_INFINITY : 0.9,
      });
    }
  }
  // Observation 0 is the goal signal, as in test_var_len_obs_and_goal_ppo.
  for (const numVis of [0, 1]) {
    for (const numVector of [0, 1]) {
      for (const numVarLen of [1, 2]) {
        list.push({
          name: `test_var_len_obs_and_goal_poca[num_vis=${numVis}-num_vector=${numVector}-num_var_len=${numVarLen}-hyper]`,
          trainer: 'poca',
          maxSteps: 25000,
          hyperparameters: { learning_rate: 3.0e-4 },
          network: { goal_conditioning_type: 'hyper' },
          envArgs: [...actions([0, 1]), ...varLen(numVis, numVector, numVarLen), '--step-size', '0.2', '--goal-indices', '0', '--group'],
          threshold: 0.9,
        });
      }
    }
  }
  // test_simple_rl.py, self-play: the same game for each team, which never meet (upstream's
  // SimpleEnvironment); what differs is which policy each team plays.
  const symmetric = ['1D?team=0', '1D?team=1'];
  const asymmetric = ['1D?team=0', '1DOpp?team=1'];
  const ghostCases: Array<[string, readonly string[], Record<string, number>, number, SelfPlayCase['judged']]> = [
    ['test_simple_ghost', symmetric, { play_against_latest_model_ratio: 1.0, save_steps: 2000, swap_steps: 2000 }, 2500, 'every team'],
    ['test_simple_ghost_fails', symmetric, { play_against_latest_model_ratio: 1.0, save_steps: 2000, swap_steps: 4000 }, 2500, 'one team'],
    [
      'test_simple_asymm_ghost',
      asymmetric,
      { play_against_latest_model_ratio: 1.0, save_steps: 10000, swap_steps: 10000, team_change: 400 },
      4000,
      'every team',
    ],
    [
      'test_simple_asymm_ghost_fails',
      asymmetric,
      { play_against_latest_model_ratio: 0.0, save_steps: 5000, swap_steps: 5000, team_change: 2000 },
      3000,
      'one team',
    ],
  ];
  for (const [name, teams, settings, maxSteps, judged] of ghostCases) {
    for (const a of oneD) {
      list.push({
        name: `${name}[${pyActions(a)}]`,
        trainer: 'ppo',
        maxSteps,
        envArgs: [...actions(a), '--behavior-name', teams.join(',')],
        threshold: 0.9,
        selfPlay: { teams, settings, judged },
      });
    }
  }
  // test_simple_rl.py, SAC
  for (const a of oneD) list.push({ name: `test_simple_sac[${pyActions(a)}]`, trainer: 'sac', maxSteps: 1000, envArgs: actions(a), threshold: 0.9 });
  for (const a of [[0, 2], [2, 0]] as Array<[number, number]>) {
    list.push({
      name: `test_2d_sac[${pyActions(a)}]`,
      trainer: 'sac',
      maxSteps: 3000,
      hyperparameters: { buffer_init_steps: 2000 },
      envArgs: [...actions(a), '--step-size', '0.8'],
      threshold: 0.8,
    });
  }
  for (const numVisual of [1, 2]) {
    for (const a of oneD) {
      list.push({
        name: `test_visual_sac[num_visual=${numVisual}-${pyActions(a)}]`,
        trainer: 'sac',
        maxSteps: DEFAULT_MAX_STEPS.sac,
        hyperparameters: { batch_size: 16, learning_rate: 3e-4 },
        envArgs: [...actions(a), ...visual(numVisual), '--step-size', '0.2'],
        threshold: 0.9,
      });
    }
  }
  for (const a of oneD) {
    list.push({
      name: `test_recurrent_sac[${pyActions(a)}]`,
      trainer: 'sac',
      maxSteps: 4000,
      hyperparameters: { batch_size: 256, learning_rate: 3e-4, buffer_init_steps: 1000, steps_per_update: 2 },
      network: { memory: { memory_size: 16, sequence_length: 16 } },
      envArgs: [...actions(a), '--memory', '--step-size', a[1] === 1 ? '0.2' : '0.5'],
      threshold: 0.9,
      seed: 1337,
    });
  }
  for (const numVarLen of [1, 2]) {
    for (const a of oneD) {
      list.push({
        name: `test_var_len_obs_sac[num_var_len=${numVarLen}-${pyActions(a)}]`,
        trainer: 'sac',
        maxSteps: DEFAULT_MAX_STEPS.sac,
        hyperparameters: { batch_size: 16, learning_rate: 3e-4 },
        envArgs: [...actions(a), ...varLen(0, 0, numVarLen), '--step-size', '0.2'],
        threshold: 0.9,
      });
    }
  }
  for (const encoder of advanced) {
    for (const numVisual of [1, 2]) {
      list.push({
        name: `test_visual_advanced_sac[${encoder}-num_visual=${numVisual}]`,
        trainer: 'sac',
        maxSteps: 100,
        hyperparameters: { batch_size: 16, learning_rate: 3e-4, buffer_init_steps: 0 },
        network: { vis_encode_type: encoder },
        envArgs: [...actions([0, 1]), ...visual(numVisual), '--step-size', '0.5', '--vis-obs-size', advancedImage(encoder)],
        threshold: 0.5,
      });
    }
  }
  // test_simple_rl.py, test_gail: GAIL alone (no extrinsic reward) with behavioral cloning.
  // Upstream builds GAILSettings(encoding_size=32) directly, past the hook that turns
  // encoding_size into hidden_units, so its discriminator has NetworkSettings' default 2 x 128.
  for (const trainer of ['ppo', 'sac'] as const) {
    for (const a of oneD) {
      list.push({
        name: `test_gail[${trainer}-${pyActions(a)}]`,
        trainer,
        maxSteps: 500,
        envArgs: [...actions(a), '--step-size', '0.2'],
        threshold: 0.9,
        demonstration: { records: 100, envArgs: [...actions(a), '--step-size', '0.2'] },
        rewardSignals: { gail: { demo_path: DEMO_PATH } },
        behavioralCloning: { demo_path: DEMO_PATH, steps: 1000 },
      });
    }
  }
  // test_gail_visual_ppo and test_gail_visual_sac: the same on one camera and no vector
  // observation, the demonstration recorded at RecordEnvironment's step size (0.2) whatever the
  // training environment's.
  for (const trainer of ['ppo', 'sac'] as const) {
    for (const a of oneD) {
      const ppo = trainer === 'ppo';
      list.push({
        name: `test_gail_visual_${trainer}[${pyActions(a)}]`,
        trainer,
        maxSteps: ppo ? 1000 : 500,
        hyperparameters: ppo ? { learning_rate: 1e-3 } : { learning_rate: 3e-4, batch_size: 16 },
        envArgs: [...actions(a), ...visual(1), '--step-size', ppo ? '0.3' : '0.2'],
        threshold: 0.9,
        demonstration: { records: 100, envArgs: [...actions(a), ...visual(1), '--step-size', '0.2'] },
        rewardSignals: { gail: { demo_path: DEMO_PATH, ...(ppo ? { gamma: 0.8 } : {}) } },
        behavioralCloning: { demo_path: DEMO_PATH, steps: ppo ? 1500 : 1000 },
      });
    }
  }
  // test_hybrid.py
  for (const a of hybrid) {
    list.push({
      name: `test_hybrid_ppo[${pyActions(a)}]`,
      trainer: 'ppo',
      maxSteps: 20000,
      hyperparameters: { batch_size: 64, buffer_size: 1024, learning_rate: 1e-3 },
      envArgs: [...actions(a), '--step-size', '0.8'],
      threshold: 0.9,
    });
  }
  for (const [numVisual, seed] of [[1, 1336], [2, 1338]]) {
    list.push({
      name: `test_hybrid_visual_ppo[num_visual=${numVisual}-training_seed=${seed}]`,
      trainer: 'ppo',
      maxSteps: 8000,
      hyperparameters: { batch_size: 64, buffer_size: 1024, learning_rate: 1e-4 },
      envArgs: [...actions([1, 1]), ...visual(numVisual)],
      threshold: 0.9,
      seed,
    });
  }
  list.push({
    name: 'test_hybrid_recurrent_ppo',
    trainer: 'ppo',
    maxSteps: 5000,
    hyperparameters: { learning_rate: 1.0e-3, batch_size: 64, buffer_size: 512 },
    network: { memory: { memory_size: 16 } },
    envArgs: [...actions([1, 1]), '--memory', '--step-size', '0.5'],
    threshold: 0.9,
  });
  for (const a of hybrid) {
    list.push({
      name: `test_hybrid_sac[${pyActions(a)}]`,
      trainer: 'sac',
      maxSteps: 8000,
      hyperparameters: { buffer_size: 50000, batch_size: 256, buffer_init_steps: 0 },
      envArgs: [...actions(a), '--step-size', '0.8'],
      threshold: 0.9,
    });
  }
  for (const [numVisual, seed] of [[1, 1337], [2, 1338]]) {
    list.push({
      name: `test_hybrid_visual_sac[num_visual=${numVisual}-training_seed=${seed}]`,
      trainer: 'sac',
      maxSteps: 3000,
      hyperparameters: { buffer_size: 50000, batch_size: 128, learning_rate: 3.0e-4 },
      envArgs: [...actions([1, 1]), ...visual(numVisual)],
      threshold: 0.9,
      seed,
    });
  }
  list.push({
    name: 'test_hybrid_recurrent_sac',
    trainer: 'sac',
    maxSteps: 4000,
    hyperparameters: { batch_size: 256, learning_rate: 3e-4, buffer_init_steps: 1000, steps_per_update: 2 },
    network: { memory: { memory_size: 16, sequence_length: 16 } },
    envArgs: [...actions([1, 1]), '--memory', '--step-size', '0.5'],
    threshold: 0.9,
    seed: 1212,
  });
  return list;
}

/** Every replicated case, in the order of upstream's files. */
export const UPSTREAM_CASES: readonly UpstreamCase[] = cases();

/** The case of this name; throws naming the known ones otherwise. */
export function upstreamCase(name: string): UpstreamCase {
  const found = UPSTREAM_CASES.find((c) => c.name === name);
  if (found === undefined) throw new Error(`No upstream case named ${name}; known: ${UPSTREAM_CASES.map((c) => c.name).join(', ')}`);
  return found;
}

/** The YAML configuration of a case: upstream's dummy config with the case's changes. */
export function caseConfiguration(c: UpstreamCase): string {
  const base = DUMMY_CONFIGS[c.trainer];
  const behavior = {
    ...base,
    hyperparameters: { ...base.hyperparameters, ...c.hyperparameters },
    network_settings: { ...base.network_settings, ...c.network },
    summary_freq: c.summaryFreq ?? base.summary_freq,
    max_steps: c.maxSteps,
    ...(c.rewardSignals === undefined ? {} : { reward_signals: c.rewardSignals }),
    ...(c.behavioralCloning === undefined ? {} : { behavioral_cloning: c.behavioralCloning }),
  };
  if (c.selfPlay === undefined) return YAML.stringify({ behaviors: { '1D': behavior } });
  const names = new Set(c.selfPlay.teams.map((team) => parseBehaviorId(team).brainName));
  return YAML.stringify({ behaviors: Object.fromEntries([...names].map((name) => [name, { ...behavior, self_play: c.selfPlay!.settings }])) });
}

/** A case's run id: its name with what a folder name cannot hold replaced. */
export function caseRunId(c: UpstreamCase): string {
  return c.name.replace(/[^A-Za-z0-9_-]+/g, '_');
}

/**
 * Trains a case over real gRPC against SimpleGoal, its results under `cwd` (results/<caseRunId>);
 * returns the mean of its last 5 episode rewards (the threshold itself when it has none and fewer
 * ended). A POCA case in groups (--group) is judged on its
 * last 5 group episodes' group rewards (pocaGroupRewards): upstream's MultiAgentEnvironment records each
 * agent's end reward, which its trainer only sees as the last agent's group reward (an agent that
 * ends first is paid at most a time penalty), so an episode scores as upstream's only when the
 * whole group succeeds.
 */
export async function runUpstreamCase(c: UpstreamCase, seed = c.seed ?? 1, cwd = tempDir(`upstream-${caseRunId(c)}`)): Promise<number> {
  const runId = caseRunId(c);
  fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration(c));
  if (c.demonstration !== undefined) recordDemonstration(path.join(cwd, DEMO_PATH), c.demonstration, seed);
  const args = await simpleGoalArgs(runId, `--seed=${seed}`, '--env-args', ...c.envArgs);
  const controller = await learn(args, { cwd, logger: memoryLogger() });
  const trainer = controller.behaviorTrainers.get('1D')!;
  const rewards = trainer instanceof PocaTrainer && c.envArgs.includes('--group') ? pocaGroupRewards(trainer) : trainer.episodeRewards;
  // Without a threshold upstream reads no reward: a short run may end fewer than 5 episodes.
  if (!Number.isFinite(c.threshold) && rewards.length < 5) return c.threshold;
  return meanOfLastFive(rewards);
}

/** A self-play case's outcome: each team's score (the mean of its last 5 episodes), in the order of its teams. */
export interface SelfPlayOutcome {
  readonly scores: readonly number[];
  readonly pass: boolean;
}

/** Trains a self-play case as runUpstreamCase does, and judges its teams as upstream does. */
export async function runSelfPlayCase(c: UpstreamCase, seed = c.seed ?? 1, cwd = tempDir(`upstream-${caseRunId(c)}`)): Promise<SelfPlayOutcome> {
  const selfPlay = c.selfPlay!;
  fs.writeFileSync(path.join(cwd, 'config.yaml'), caseConfiguration(c));
  const args = await simpleGoalArgs(caseRunId(c), `--seed=${seed}`, '--env-args', ...c.envArgs);
  const controller = await learn(args, { cwd, logger: memoryLogger() });
  const scores = selfPlay.teams.map((team) => {
    const ghost = controller.ghostTrainers.get(parseBehaviorId(team).brainName)!;
    return meanOfLastFive(ghost.episodeRewardsOf(team));
  });
  const above = scores.some((score) => score > c.threshold);
  const below = scores.some((score) => score < c.threshold);
  const pass = selfPlay.judged === 'every team' ? scores.every((score) => score > c.threshold) : above && below;
  return { scores, pass };
}

/**
 * The group reward of each group episode of SimpleGoal --group: the one the last agent to end
 * brings (never 0 there). A groupmate that ends at the same step also ends with all its
 * groupmates done, so POCA's trainer reports its group reward too, 0, as upstream's does: that
 * is no group episode of its own.
 */
export function pocaGroupRewards(trainer: PocaTrainer): number[] {
  return trainer.groupEpisodeRewards.filter((reward) => reward !== 0);
}

/** SimpleGoal's solved policy (its heuristic) recorded to `file` by the built-in environment itself. */
export function recordDemonstration(file: string, demonstration: NonNullable<UpstreamCase['demonstration']>, seed: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const args = ['--heuristic', '--record', file, '--record-steps', String(demonstration.records), '--steps', String(10 * demonstration.records), '--seed', String(seed)];
  execFileSync(process.execPath, [builtinExecutable('SimpleGoal'), ...args, ...demonstration.envArgs], { stdio: 'pipe' });
}
