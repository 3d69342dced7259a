/**
 * One GAIL discriminator loss against Unity ML-Agents' own: fixtures/gail-update.json and
 * gail-var-len-update.json.gz hold what upstream's DiscriminatorNetwork.compute_loss (release_21,
 * torch; recorded by the script beside them) gave on its weights, a policy and an expert batch
 * and the random draws it took, and the gradients its backward gave, the gradient penalty's second
 * derivatives included: with an image as the first observation (simple encoder; a normalized
 * vector observation, the actions and dones, VAIL); with a goal signal first conditioning the body
 * through the hypernetwork beside an image (match3); with a variable-length observation first
 * (the penalty summed over its entities, through the entity attention; padded entities at the
 * end, mixed with the other side's values as upstream mixes them); and with a vector observation
 * first that also reaches the attention over two variable-length observations as x_self (VAIL).
 * Ours, on the same weights, rows and draws, gives the same stats, beta and gradients.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as zlib from 'zlib';
import { memoryLogger } from '../../../src/common/logger';
import { ActionSpec, BehaviorSpec, ObservationType } from '../../../src/env/behavior-spec';
import { selectBackend } from '../../../src/networks/backend';
import { blockValues, type ParameterBlock } from '../../../src/networks/layers/layer';
import { GAIL_TAGS, GailRewardProvider, nextBeta } from '../../../src/trainers/reward-signals/gail';
import type { RewardBatch } from '../../../src/trainers/reward-signals/reward-provider';
import { AgentBuffer } from '../../../src/trainers/buffer';
import { entityObservation, network, vectorObservation, visualObservation } from '../../networks/model-fixtures';
import { converted } from '../../helpers/torch-layouts';

interface Rows {
  obs: number[][];
  continuous: number[];
  discrete: number[];
  done: number[];
}

interface Case {
  use_actions: boolean;
  use_vail: boolean;
  parameters: Record<string, number[]>;
  shapes: Record<string, number[]>;
  policy: Rows;
  expert: Rows;
  draws: { rand: number[][]; randn: number[][] };
  stats: Record<string, number>;
  beta: number | null;
  gradients: Record<string, number[]>;
}

const fixtures = path.join(__dirname, 'fixtures');
const fixture = {
  ...JSON.parse(fs.readFileSync(path.join(fixtures, 'gail-update.json'), 'utf8')),
  ...JSON.parse(zlib.gunzipSync(fs.readFileSync(path.join(fixtures, 'gail-var-len-update.json.gz'))).toString('utf8')),
} as Record<string, Case>;
const ROWS = 4;
const INITIAL_BETA = 0.3;

const CASES: Array<[string, BehaviorSpec, ReturnType<typeof network>]> = [
  [
    'image first',
    { observationSpecs: [visualObservation(3, 20, 20), vectorObservation(2)], actionSpec: new ActionSpec(1, [2]) },
    network({ normalize: true, hidden_units: 8, num_layers: 2, vis_encode_type: 'simple' }),
  ],
  [
    'goal first, hyper',
    { observationSpecs: [vectorObservation(2, ObservationType.GOAL_SIGNAL), visualObservation(2, 5, 6), vectorObservation(3)], actionSpec: new ActionSpec(0, [3]) },
    network({ hidden_units: 6, num_layers: 2, vis_encode_type: 'match3', goal_conditioning_type: 'hyper' }),
  ],
  [
    'variable-length first',
    { observationSpecs: [entityObservation(5, 3), vectorObservation(2)], actionSpec: new ActionSpec(1, [2]) },
    network({ normalize: true, hidden_units: 8, num_layers: 1 }),
  ],
  [
    'vector first, two variable-length',
    { observationSpecs: [vectorObservation(3), entityObservation(4, 2), entityObservation(3, 3)], actionSpec: new ActionSpec(0, [3]) },
    network({ hidden_units: 8, num_layers: 2 }),
  ],
];

/** Upstream's name for our block (its Sequentials put an activation after each layer: our layer l is its module 2l). */
function torchName(block: string, conditioned: boolean): string {
  return block
    .replace(/^gail\.encoder\.encoders\.(\d+)\./, 'encoder.observation_encoder.processors.$1.')
    .replace(/^gail\.encoder\.encoders\.(rsa|x_self_encoder)\./, 'encoder.observation_encoder.$1.')
    .replace(/^gail\.encoder\.layers\.(\d+)\./, (_, l: string) => `encoder._body_endoder.${conditioned ? 'layers' : 'seq_layers'}.${2 * Number(l)}.`)
    .replace(/^gail\.z_mu\./, '_z_mu_layer.')
    .replace(/^gail\.z_sigma$/, '_z_sigma')
    .replace(/^gail\.estimator\./, '_estimator.0.');
}

function batchOf(rows: Rows, spec: BehaviorSpec): RewardBatch {
  return {
    count: ROWS,
    observations: rows.obs.map((values) => Float32Array.from(values)),
    environmentRewards: new Float32Array(ROWS),
    continuousActions: Float32Array.from(rows.continuous),
    discreteActions: Int32Array.from(rows.discrete.length > 0 ? rows.discrete : new Array(ROWS * spec.actionSpec.discreteBranches.length).fill(0)),
    dones: Float32Array.from(rows.done),
  };
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe("GAIL's discriminator loss against upstream's", () => {
  it.each(CASES)("gives upstream's stats, beta and gradients on the same weights, rows and draws (%s)", (name, spec, settings) => {
    const upstream = fixture[name];
    const provider = new GailRewardProvider(
      { gamma: 0.99, strength: 1, learning_rate: 3e-4, encoding_size: null, use_actions: upstream.use_actions, use_vail: upstream.use_vail, demo_path: '', network_settings: settings },
      spec,
      1,
      { behavior: '1D', demonstrations: new AgentBuffer() },
    );
    const conditioned = provider.body.goalConditioned;
    const loaded = new Set<string>();
    for (const block of provider.blocks) {
      const theirs = torchName(block.name, conditioned);
      if (upstream.parameters[theirs] === undefined) throw new Error(`The fixture has no ${theirs} for ${block.name}.`);
      blockValues(provider.parameters, block).set(converted(block, upstream.parameters[theirs], true));
      loaded.add(theirs);
    }
    expect([...loaded].sort()).toEqual(Object.keys(upstream.parameters).filter((key) => key !== '_beta').sort());

    const policy = batchOf(upstream.policy, spec);
    const expert = batchOf(upstream.expert, spec);
    // As upstream's update: the expert's vector observations into the normalizer first.
    const vector = spec.observationSpecs.findIndex((obs) => obs.shape.length === 1);
    provider.normalizer?.update(expert.observations[vector], ROWS);

    // Upstream's draws, laid out as ours: each observation's, then the actions' and the dones' (rows).
    const rand = upstream.draws.rand;
    const images = spec.observationSpecs.flatMap((obs, k) => (obs.shape.length === 3 ? [Float32Array.from(rand[k])] : []));
    const entities = spec.observationSpecs.flatMap((obs, k) => (obs.shape.length === 2 ? [Float32Array.from(rand[k])] : []));
    const rowParts = [...spec.observationSpecs.flatMap((obs, k) => (obs.shape.length === 1 ? [{ values: rand[k], width: obs.shape[0] }] : []))];
    if (upstream.use_actions) {
      const actionWidth = spec.actionSpec.continuousSize + spec.actionSpec.discreteBranches.reduce((a, b) => a + b, 0);
      rowParts.push({ values: rand[spec.observationSpecs.length], width: actionWidth }, { values: rand[spec.observationSpecs.length + 1], width: 1 });
    }
    const rows = Float32Array.from(Array.from({ length: ROWS }, (_, i) => rowParts.flatMap((part) => part.values.slice(i * part.width, (i + 1) * part.width))).flat());
    const [noisePolicy, noiseExpert, noiseMixed] = upstream.draws.randn;
    const noise = upstream.use_vail ? { policy: Float32Array.from(noisePolicy), expert: Float32Array.from(noiseExpert), mixed: Float32Array.from(noiseMixed) } : null;

    provider.beta = INITIAL_BETA;
    const result = provider.discriminatorLoss(policy, expert, { mixing: { images, entities, rows }, noise }, (kl) => nextBeta(INITIAL_BETA, kl));

    expect(Object.keys(result.stats).sort()).toEqual(Object.keys(upstream.stats).sort());
    for (const [tag, value] of Object.entries(upstream.stats)) {
      // The penalty is 10 less a little: that little is what its terms say, and float32 means
      // over an image's pixels round it apart by a fraction of a percent.
      if (tag === GAIL_TAGS.gradientPenalty) expect(Math.abs(result.stats[tag] - value)).toBeLessThan(1e-2 * (10 - value));
      else expect(result.stats[tag]).toBeCloseTo(value, 4);
    }
    if (upstream.beta !== null) expect(result.beta).toBeCloseTo(upstream.beta, 6);
    for (const block of provider.blocks) {
      const theirs = upstream.gradients[torchName(block.name, conditioned)];
      const ours = converted(block, blockValues(result.gradient, block), false);
      const scale = Math.max(...theirs.map(Math.abs));
      ours.forEach((value, i) => {
        if (Math.abs(value - theirs[i]) > 1e-5 + 1e-3 * scale) throw new Error(`${block.name}[${i}]: ours ${value}, upstream ${theirs[i]}`);
      });
    }
  });
});
