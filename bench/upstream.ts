/**
 * npm run bench:upstream — every replicated case of upstream's trainer test suite
 * (test_simple_rl.py, test_hybrid.py; see test/cli/upstream-cases.ts), trained one after another
 * over real gRPC against the built-in SimpleGoal on the wasm backend, one row each: the final
 * reward as upstream judges it (mean of the last 5 episodes), the threshold, pass, wall time.
 * Self-play cases (ghost) show each team's score, team 0 first; test_simple_ghost and
 * test_simple_asymm_ghost pass when every team is above the threshold, their _fails twins when
 * one team is above and one below (a team left playing an untrained snapshot).
 *
 *   npm run bench:upstream                       all cases, each with its own seed (1 unless upstream names one)
 *   npm run bench:upstream -- visual             only the cases whose name contains "visual"
 *   npm run bench:upstream -- --seed 2 visual    another seed for every case
 *   npm run bench:upstream -- --seed 1,2,3,4 goal_poca   each case once per seed, one row each
 */
import { runSelfPlayCase, runUpstreamCase, UPSTREAM_CASES } from '../test/cli/upstream-cases';
import { selectBackend } from '../src/networks/backend';
import { memoryLogger } from '../src/common/logger';
import { printTable } from './table';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const seedFlag = args.indexOf('--seed');
  const seeds = seedFlag >= 0 ? parseSeeds(args.splice(seedFlag, 2)[1]) : [undefined];
  const filters = args;
  await selectBackend('wasm', memoryLogger());
  const selected = UPSTREAM_CASES.filter((c) => filters.length === 0 || filters.some((f) => c.name.includes(f)));
  const rows: string[][] = [];
  let passed = 0;
  const runs = selected.flatMap((c) => seeds.map((seed) => ({ c, seed })));
  for (const { c, seed } of runs) {
    const start = performance.now();
    let reward: string;
    let pass: boolean;
    try {
      if (c.selfPlay !== undefined) {
        // Each team's own score, judged as upstream's ghost cases judge them.
        const outcome = await runSelfPlayCase(c, seed ?? c.seed);
        reward = outcome.scores.map((score) => score.toFixed(3)).join(' / ');
        pass = outcome.pass;
      } else {
        const score = await runUpstreamCase(c, seed ?? c.seed);
        reward = score.toFixed(3);
        pass = score >= c.threshold;
      }
    } catch (err) {
      reward = `error: ${(err as Error).message.split('\n')[0].slice(0, 80)}`;
      pass = false;
    }
    if (pass) passed++;
    const row = [c.name, String(seed ?? c.seed ?? 1), String(c.maxSteps), reward, Number.isFinite(c.threshold) ? String(c.threshold) : 'none', pass ? 'yes' : 'NO', ((performance.now() - start) / 1000).toFixed(1)];
    console.log(row.join('  '));
    rows.push(row);
  }
  printTable(
    `upstream's test cases on SimpleGoal (wasm backend, seeds ${seeds.join(',') || 'per case'}): ${passed} of ${rows.length} pass`,
    ['case', 'seed', 'max_steps', 'final reward (last 5)', 'threshold', 'pass', 'wall s'],
    rows,
  );
}

/** `--seed` takes one seed or a comma-separated list of them. */
function parseSeeds(text: string | undefined): number[] {
  if (text === undefined || !/^\d+(,\d+)*$/.test(text)) {
    throw new Error(`--seed takes a seed or a comma-separated list of seeds (e.g. --seed 1,2,3,4), not '${text ?? ''}'`);
  }
  return text.split(',').map(Number);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
