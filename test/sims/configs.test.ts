/**
 * The configurations in config/ for the built-in environments: each loads, names the behavior its
 * environment announces, and holds ML-Agents' own settings for that environment
 * (../shared/reference/configs) with the time scale raised, as config/ppo/3DBall.yaml does.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { memoryLogger } from '../../src/common/logger';
import { loadRunOptions } from '../../src/config';
import { Academy } from '../../src/sims/sdk/academy';
import { SimDefinition } from '../../src/sims/sdk/run-environment';
import { BALL3D } from '../../src/sims/envs/ball3d';
import { BASIC } from '../../src/sims/envs/basic';
import { DUNGEON_ESCAPE } from '../../src/sims/envs/dungeon-escape';
import { GRIDWORLD } from '../../src/sims/envs/gridworld';
import { HALLWAY } from '../../src/sims/envs/hallway';
import { PYRAMIDS } from '../../src/sims/envs/pyramids';
import { SORTER } from '../../src/sims/envs/sorter';
import { TENNIS } from '../../src/sims/envs/tennis';
import { VISUAL3DBALL } from '../../src/sims/envs/visual3dball';
import { REFERENCE_CONFIGS, writeConfig } from '../config/config-helpers';

const CONFIG = path.resolve(__dirname, '../../config');
const ENVIRONMENTS = new Map<string, SimDefinition>([BALL3D, BASIC, DUNGEON_ESCAPE, GRIDWORLD, HALLWAY, PYRAMIDS, SORTER, TENNIS, VISUAL3DBALL].map((d) => [d.name, d]));

/** config/<folder>/<Environment>.yaml for every built-in environment that has one, and the trainer_type each folder holds (ML-Agents' imitation configurations are PPO). */
const FOLDERS = { ppo: 'ppo', sac: 'sac', poca: 'poca', imitation: 'ppo' } as const;
const configs = Object.entries(FOLDERS).flatMap(([folder, trainer]) =>
  fs
    .readdirSync(path.join(CONFIG, folder))
    .filter((name) => name.endsWith('.yaml'))
    .map((name) => ({ folder, trainer, environment: name.replace(/\.yaml$/, ''), file: path.join(CONFIG, folder, name) })),
);

/** The environment a file is for: the longest built-in name that begins its name (PyramidsRND: Pyramids). */
function environmentOf(fileStem: string): SimDefinition | undefined {
  const names = [...ENVIRONMENTS.keys()].filter((name) => fileStem.startsWith(name));
  return ENVIRONMENTS.get(names.sort((a, b) => b.length - a.length)[0]);
}

/**
 * The behaviors a configuration names for an environment: the names its agents announce, each
 * without its `?team=N` (as upstream's BehaviorIdentifiers, whose name before `?` picks the settings).
 */
function behaviorNamesOf(definition: SimDefinition): string[] {
  const academy = new Academy();
  const defaults = Object.fromEntries(Object.entries(definition.options).map(([name, o]) => [name, o.default]));
  definition.create(academy, defaults, 1);
  return [...new Set([...academy.behaviors.keys()].map((name) => name.split('?')[0]))];
}

describe('config/ for the built-in environments', () => {
  it('has the configurations of DungeonEscape (POCA and PPO), GridWorld, Hallway, Pyramids (curiosity, RND and imitation), Sorter (its curriculum), Tennis and Visual3DBall', () => {
    const names = configs.map((c) => `${c.folder}/${c.environment}`);
    expect(names).toEqual(
      expect.arrayContaining([
        'poca/DungeonEscape',
        'ppo/DungeonEscape',
        'ppo/GridWorld',
        'sac/GridWorld',
        'ppo/Hallway',
        'sac/Hallway',
        'ppo/Pyramids',
        'ppo/PyramidsRND',
        'imitation/Pyramids',
        'ppo/Sorter_curriculum',
        'ppo/Tennis',
        'ppo/Visual3DBall',
      ]),
    );
  });

  it('trains DungeonEscape with PPO on the very settings of its POCA configuration, trainer_type aside', () => {
    const [poca, ppo] = ['poca', 'ppo'].map((folder) => YAML.parse(fs.readFileSync(path.join(CONFIG, folder, 'DungeonEscape.yaml'), 'utf8')));
    expect([poca.behaviors.DungeonEscape.trainer_type, ppo.behaviors.DungeonEscape.trainer_type]).toEqual(['poca', 'ppo']);
    for (const config of [poca, ppo]) delete config.behaviors.DungeonEscape.trainer_type;
    expect(ppo).toEqual(poca);
  });

  it("trains Tennis with ML-Agents' own Tennis settings and self-play, max_steps aside (upstream's file is not among ../shared/reference's)", () => {
    // ML-Agents' config/ppo/Tennis.yaml (release 21), as it is.
    const upstream = writeConfig(`
behaviors:
  Tennis:
    trainer_type: ppo
    hyperparameters: {batch_size: 2048, buffer_size: 20480, learning_rate: 0.0003, beta: 0.005, epsilon: 0.2, lambd: 0.95, num_epoch: 3, learning_rate_schedule: constant}
    network_settings: {normalize: true, hidden_units: 256, num_layers: 2, vis_encode_type: simple}
    reward_signals: {extrinsic: {gamma: 0.99, strength: 1.0}}
    keep_checkpoints: 5
    max_steps: 50000000
    time_horizon: 1000
    summary_freq: 10000
    threaded: true
    self_play: {save_steps: 50000, team_change: 100000, swap_steps: 2000, window: 10, play_against_latest_model_ratio: 0.5, initial_elo: 1200.0}
`);
    const ours = loadRunOptions([path.join(CONFIG, 'ppo', 'Tennis.yaml')], '/', memoryLogger()).behaviors.Tennis;
    const theirs = loadRunOptions([upstream], '/', memoryLogger()).behaviors.Tennis;
    // Ours: a budget for our smaller court (config/ppo/Tennis.yaml says why).
    expect(ours.max_steps).toBe(2000000);
    expect({ ...ours, max_steps: theirs.max_steps }).toEqual(theirs);
    expect(ours.self_play).not.toBeNull();
  });

  it.each(configs.map((c) => [`${c.folder}/${c.environment}`, c] as const))(
    '%s loads, trains the behavior its environment announces, at time scale 1000',
    (_name, config) => {
      const options = loadRunOptions([config.file], '/', memoryLogger());
      const definition = environmentOf(config.environment);
      expect(definition).toBeDefined();
      expect(Object.keys(options.behaviors)).toEqual(behaviorNamesOf(definition!));
      expect(Object.values(options.behaviors).every((settings) => settings.trainer_type === config.trainer)).toBe(true);
      expect(options.engine_settings.time_scale).toBe(1000);
    },
  );

  const withReference = configs.filter((c) => fs.existsSync(path.join(REFERENCE_CONFIGS, c.folder, `${c.environment}.yaml`)));
  if (withReference.length === 0) {
    console.log(`skipped: ../shared/reference not present (looked for ${REFERENCE_CONFIGS})`);
    it.skip('skipped: ../shared/reference not present', () => undefined);
    return;
  }

  it.each(withReference.map((c) => [`${c.folder}/${c.environment}`, c] as const))(
    "%s holds ML-Agents' own settings for the behavior (threaded: true aside) and its environment parameters",
    (_name, config) => {
      const ours = loadRunOptions([config.file], '/', memoryLogger());
      const upstream = loadRunOptions([path.join(REFERENCE_CONFIGS, config.folder, `${config.environment}.yaml`)], '/', memoryLogger());
      for (const [behavior, settings] of Object.entries(ours.behaviors)) {
        // Our addition to a behavior: PPO's updates in a worker thread (config/ppo/3DBall.yaml).
        expect({ ...settings, threaded: false }).toEqual({ ...upstream.behaviors[behavior], threaded: false });
      }
      // Curricula and samplers (Sorter_curriculum's num_tiles lessons) as upstream's, lesson for lesson.
      expect(ours.environment_parameters).toEqual(upstream.environment_parameters);
    },
  );
});
