/**
 * npm run bench:board: the board on a large results folder, in headless Chromium.
 *   - a results folder of 20 runs x 10 tags x 100,000 points (generated: one event per scalar, as
 *     torch's SummaryWriter writes them; one run written, the others copies of its event file)
 *   - the board's start (reading and checking every record), then the time from opening the page
 *     to its first chart drawn
 *   - the live delay: an event appended to a run's file, to the chart redrawn with it (10 times)
 * Options: --runs 20 --tags 10 --points 100000 --keep (leave the folder in the temp folder)
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { parseArgs } from 'util';
import { memoryLogger } from '../src/common/logger';
import { startBoard } from '../src/board/server';
import { EventFileWriter, encodeEvent } from '../src/stats/event-file';
import { encodeRecord } from '../src/stats/tfrecord';
import { launchChromium } from '../test/helpers/browser';
import { printTable } from './table';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    tags: { type: 'string', default: '10' },
    points: { type: 'string', default: '100000' },
    keep: { type: 'boolean', default: false },
  },
});
const RUNS = Number(values.runs);
const TAGS = Number(values.tags);
const POINTS = Number(values.points);
const TAG_NAMES = ['Environment/Cumulative Reward', 'Environment/Episode Length', 'Policy/Entropy', 'Policy/Learning Rate', 'Policy/Extrinsic Value Estimate', 'Policy/Extrinsic Reward', 'Losses/Policy Loss', 'Losses/Value Loss', 'Policy/Epsilon', 'Policy/Beta'];
const tagName = (k: number) => TAG_NAMES[k] ?? `Custom/Tag ${k}`;

function seconds(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** One behavior's event file with POINTS summaries of TAGS scalars, then copies as the other runs. */
function generate(results: string): string {
  const first = path.join(results, 'run-00', 'Behavior');
  let wallTime = 1700000000;
  const writer = new EventFileWriter(first, () => wallTime);
  for (let i = 0; i < POINTS; i++) {
    wallTime += 0.5;
    for (let k = 0; k < TAGS; k++) {
      writer.add({ step: (i + 1) * 1000, summary: { value: [{ tag: tagName(k), simple_value: Math.sin(i / 500 + k) + i / POINTS }] } });
    }
    if (i % 1000 === 999) writer.flush();
  }
  writer.close();
  for (let r = 1; r < RUNS; r++) {
    const dir = path.join(results, `run-${String(r).padStart(2, '0')}`, 'Behavior');
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(writer.path, path.join(dir, path.basename(writer.path)));
  }
  return writer.path;
}

async function main(): Promise<void> {
  const results = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-board-'));
  let start = process.hrtime.bigint();
  const file = generate(results);
  const generateSeconds = seconds(start);
  const bytes = fs.statSync(file).size * RUNS;

  start = process.hrtime.bigint();
  const board = await startBoard({ resultsDir: results, port: 0, host: '127.0.0.1', logger: memoryLogger() });
  const startSeconds = seconds(start);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1500, height: 1000 });
    await page.goto(board.url);
    await page.waitForFunction('window.board.firstChartAt !== null', { timeout: 60000 });
    const firstChartMs = (await page.evaluate('window.board.firstChartAt')) as number;
    await page.waitForFunction(`document.querySelectorAll('.chart canvas').length >= ${TAGS}`, { timeout: 60000 });

    const delays: number[] = [];
    let step = (POINTS + 1) * 1000;
    for (let i = 0; i < 10; i++, step += 1000) {
      const before = await page.evaluate(`window.board.points('run-00', 'Behavior', ${JSON.stringify(tagName(0))}).total`);
      const writtenAt = Date.now();
      fs.appendFileSync(file, encodeRecord(encodeEvent({ wall_time: writtenAt / 1000, step, summary: { value: [{ tag: tagName(0), simple_value: 2 }] } })));
      await page.waitForFunction(
        `window.board.points('run-00', 'Behavior', ${JSON.stringify(tagName(0))}).total > ${before} && window.board.pushedPointsDrawnAt >= ${writtenAt}`,
        { polling: 'raf', timeout: 10000 },
      );
      delays.push(((await page.evaluate('window.board.pushedPointsDrawnAt')) as number) - writtenAt);
    }
    delays.sort((a, b) => a - b);
    printTable(
      'mlagents-board on a generated results folder',
      ['what', 'value'],
      [
        ['results folder', `${RUNS} runs x ${TAGS} tags x ${POINTS} points = ${RUNS * TAGS * POINTS} scalar events, ${(bytes / 2 ** 20).toFixed(0)} MiB`],
        ['generated in', `${generateSeconds.toFixed(1)} s`],
        ['board start (every record read and checked)', `${startSeconds.toFixed(2)} s`],
        ['page opened to first chart drawn', `${firstChartMs.toFixed(0)} ms`],
        ['summary written to point drawn (10 times)', `median ${delays[5]} ms, max ${delays[9]} ms`],
      ],
    );
  } finally {
    await browser.close();
    await board.close();
    if (values.keep) console.log(`The results folder stays in ${results}`);
    else fs.rmSync(results, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
